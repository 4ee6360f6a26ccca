"""Where a note's links and installs point: this machine, the team's network, a tool's own host,
or somewhere unknown.

A note that pipes a script from a host into a shell, or installs a package from a URL, reaches
outside the project. That is ordinary when the host is the tool's documented one (rustup from
sh.rustup.rs, uv from astral.sh), a public registry, or the team's own network (localhost,
private addresses, `.internal`/`.corp`/`.local` names); it is how an attack starts when the host
is unknown, a bare public address, or a look-alike. The list below is the documented hosts of
common developer tools; `MNEMO_TRUSTED_HOSTS` adds a team's own (core takes them as an argument).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable

# Documented installers, registries and release hosts of common developer tools. A host matches
# itself and its subdomains.
OFFICIAL = frozenset(
    """
    sh.rustup.rs static.rust-lang.org rust-lang.org rustup.rs crates.io astral.sh pypi.org pythonhosted.org
    python.org python-poetry.org pdm-project.org pyenv.run conda.io anaconda.com anaconda.org repo.anaconda.com
    pytorch.org download.pytorch.org tensorflow.org huggingface.co nodejs.org npmjs.org npmjs.com yarnpkg.com
    get.pnpm.io pnpm.io bun.sh deno.land deno.com jsr.io volta.sh get.volta.sh fnm.vercel.app nvm.sh
    github.com raw.githubusercontent.com objects.githubusercontent.com githubusercontent.com gist.github.com
    codeload.github.com gitlab.com bitbucket.org codeberg.org sourceforge.net
    get.docker.com download.docker.com docker.com docker.io ghcr.io quay.io gcr.io registry.k8s.io k8s.io
    get.k3s.io k3s.io get.helm.sh helm.sh charts.helm.sh charts.bitnami.com bitnami.com charts.jetstack.io
    kubernetes.github.io istio.io get.pulumi.com pulumi.com releases.hashicorp.com apt.releases.hashicorp.com
    hashicorp.com install.determinate.systems nixos.org nixos.sh brew.sh ohmyz.sh ohmyzsh.github.io
    starship.rs mise.run mise.jdx.dev sdkman.io get.sdkman.io ollama.com ollama.ai cli.github.com
    get.jetify.com tailscale.com pkgs.tailscale.com foundry.paradigm.xyz dot.net dotnet.microsoft.com
    aka.ms microsoft.com packages.microsoft.com visualstudio.com chocolatey.org community.chocolatey.org
    sh.flyctl.io fly.io vercel.com netlify.com railway.app supabase.com cloud.google.com dl.google.com
    packages.cloud.google.com sdk.cloud.google.com awscli.amazonaws.com amazonaws.com aws.amazon.com
    rustwasm.github.io golang.org go.dev proxy.golang.org sum.golang.org google.golang.org gopkg.in
    golangci-lint.run goreleaser.com install.goreleaser.com taskfile.dev dl.k8s.io storage.googleapis.com
    apt.llvm.org llvm.org cmake.org kitware.com gradle.org services.gradle.org repo.maven.apache.org
    repo1.maven.org maven.apache.org apache.org archive.apache.org downloads.apache.org rubygems.org
    ruby-lang.org get.rvm.io rvm.io getcomposer.org packagist.org php.net haskell.org get-ghcup.haskell.org
    ghcup.haskell.org opam.ocaml.org ocaml.org elixir-lang.org hex.pm ziglang.org julialang.org
    install.julialang.org cran.r-project.org r-project.org swift.org download.swift.org flutter.dev
    storage.flutter-io.cn dart.dev pub.dev deb.nodesource.com nodesource.com rpm.nodesource.com
    debian.org ubuntu.com archive.ubuntu.com security.ubuntu.com launchpad.net ppa.launchpadcontent.net
    fedoraproject.org alpinelinux.org archlinux.org kernel.org gnu.org sentry.io cli.sentry.dev
    mcp.sentry.dev mcp.linear.app api.githubcopilot.com mcp.notion.com mcp.atlassian.com mcp.stripe.com
    mcp.asana.com mcp.vercel.com mcp.supabase.com mcp.cloudflare.com mcp.paypal.com mcp.hubspot.com claude.ai
    opencode.ai
    deb.debian.org mozilla.org firefox.com chromium.org googlesource.com jetbrains.com
    downloads.mongodb.com mongodb.org postgresql.org apt.postgresql.org redis.io mysql.com
    elastic.co artifacts.elastic.co grafana.com apt.grafana.com prometheus.io
    install.python-poetry.org get.scoop.sh scoop.sh pixi.sh prefix.dev micro.mamba.pm mamba.readthedocs.io
    just.systems atuin.sh coder.com cli.doppler.com get.casaos.io rustup.sh spacetimedb.com wasmtime.dev
    wasmer.io get.wasmer.io bazel.build bazelisk.build dl.cloudsmith.io cloudsmith.io
    nginx.org caddyserver.com getcaddy.com cloudflare.com pkg.cloudflare.com developers.cloudflare.com
    1password.com downloads.1password.com cache.nixos.org get.daml.com bazel.build bazelisk.build
    earthly.dev dagger.io dl.dagger.io just.systems direnv.net atuin.sh sh.atuin.sh zellij.dev
    wasmer.io get.wasmer.io wasmtime.dev spin.fermyon.dev fermyon.com get.tenv.io opentofu.org
    get.opentofu.org terraform.io tfenv.io aquasecurity.github.io trivy.dev anchore.io get.anchore.io
    oss.sonatype.org sonatype.org pkg.go.dev buf.build hatch.pypa.io pypa.io bootstrap.pypa.io
    npmmirror.com registry.npmmirror.com pypi.tuna.tsinghua.edu.cn mirrors.tuna.tsinghua.edu.cn
    mirrors.aliyun.com mirrors.ustc.edu.cn pypi.douban.com goproxy.cn goproxy.io mirrors.huaweicloud.com
    mirrors.cloud.tencent.com rsproxy.cn
    """.split()
)
_PRIVATE_SUFFIXES = (
    ".local", ".localhost", ".internal", ".corp", ".lan", ".intranet", ".intra", ".home.arpa", ".private", ".svc",
    ".cluster.local", ".home",
)  # fmt: skip
_INTERNAL_LABEL = re.compile(r"(?:^|\.)(?:internal|intranet|intra|corp|private|lan|local)(?:\.|$)")
_URL = re.compile(
    r"\b(?:https?|ftp|wss?|grpcs?|tcp|git\+https?|git\+ssh|sparse\+https?)://([^\s/?#'\"`)<>\]|,;]+)", re.I
)


def host_of(netloc: str) -> str:
    host = netloc.rsplit("@", 1)[-1].lower().strip(".")
    if host.startswith("["):
        return host[1:].split("]")[0]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def urls(text: str) -> list[tuple[str, str]]:
    """(url, host) for each URL in `text`, in order."""
    out = []
    for m in _URL.finditer(text):
        out.append((m.group(0), host_of(m.group(1))))
    return out


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        return None


def _matches(host: str, names: Iterable[str]) -> bool:
    return any(host == n or host.endswith("." + n) for n in names)


def kind(host: str, trusted: Iterable[str] = ()) -> str:
    """'local' (this machine, the team's network), 'official' (a tool's documented host or one the
    user trusts), 'address' (a bare public IP), or 'unknown'."""
    host = host.lower().strip(".")
    ip = _ip(host)
    if ip is not None:
        return "local" if (ip.is_private and not _documentation(ip)) or ip.is_loopback else "address"
    if host == "localhost" or host.endswith(_PRIVATE_SUFFIXES) or "." not in host:
        return "local"
    if _INTERNAL_LABEL.search(host.rsplit(".", 1)[0]):
        return "local"  # npm.internal.example.com, artifacts.corp.acme.io
    if _matches(host, OFFICIAL) or _matches(host, (t.lower().strip(".") for t in trusted)):
        return "official"
    return "unknown"


def _documentation(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24: examples in docs, never a team's network.
    (Python counts them as private; a note that installs from one is using a stand-in address.)"""
    return any(
        ip in ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24", "2001:db8::/32")
    )


def outside(host: str, trusted: Iterable[str] = ()) -> bool:
    """Whether content from `host` comes from outside the project and its known tools."""
    return kind(host, trusted) in ("address", "unknown")


def without_password(url: str) -> str:
    """A connection URL as it may be shown (dashboard, logs, errors): the password replaced by
    `***`, in the authority and in a `password=` query parameter."""
    out = re.sub(r"^([a-z][\w+.-]*://[^:/@?#]*):[^@/?#]*@", r"\1:***@", url.strip(), flags=re.I)
    return re.sub(r"([?&]password=)[^&#]*", r"\1***", out, flags=re.I)


def password_of(url: str) -> str | None:
    """The password a connection URL carries, if any (to cut it out of what a driver says)."""
    m = re.match(r"^[a-z][\w+.-]*://[^:/@?#]*:([^@/?#]*)@", url.strip(), flags=re.I) or re.search(
        r"[?&]password=([^&#]*)", url, flags=re.I
    )
    return m.group(1) if m and m.group(1) else None
