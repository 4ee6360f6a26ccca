"""What running a note's code and commands would do: run or install code from outside the
project, carry a secret or the project's data off the machine, turn the assistant's tools against
the person, or weaken the project's safety (hooks, reviews, permissions, the agent's own settings)
with the cover of a policy. The words a note says are judged in `core.intent`; both run on every
view of a note (`core.injection`). `judge_code` returns the first reason found, or None.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from . import hosts as _hosts
from . import lexicon as lx
from .intent import AUTH_PATH, HOSTPORT, destinations, negated, sentences

_INTERPRETER = (
    r"(?:sudo\s+(?:-\S+\s+)*)?(?:env\s+\S+\s+)?(?:ba|z|da|k|fi)?sh\b|python[\d.]*\b|node\b|perl\b|ruby\b|php\b|iex\b|"
    r"invoke-expression\b|pwsh\b|powershell\b|source\b|deno\b|bun\b"
)
_FETCH = r"(?:curl|wget|iwr|irm|invoke-webrequest|invoke-restmethod|fetch|http|aria2c|lwp-download)\b"
_PIPE = re.compile(
    _FETCH + r"[^|\n]{0,240}?((?:https?|ftp)://[^\s|'\"`)]+)[^|\n]{0,160}\|\s*(?:" + _INTERPRETER + ")", re.I
)
_SUBST = re.compile(r"(?:<\(|\$\()\s*" + _FETCH + r"[^)\n`]{0,200}?((?:https?|ftp)://[^\s)'\"`]+)", re.I)
_REMOTE_EVAL = re.compile(
    r"(?:eval|exec|assert|include|require|source|import)\s*\(?\s*(?:\$?[\w:.]+\s*\(\s*)*['\"]?((?:https?|ftp)://[^\s'\")]+)"
    r"|\b(?:deno\s+run|npx|bunx|msiexec\s+/i|start-process|invoke-item)\s+(?:-\S+\s+)*['\"]?((?:https?|ftp)://[^\s'\")]+)"
    r"|\bkubectl\s+(?:apply|create)\s+(?:-\S+\s+)*-f\s+((?:https?)://[^\s'\")]+)|\bbrew\s+tap\s+\S+\s+((?:https?)://\S+)"
    r"|\bhelm\s+(?:repo\s+add|install)\s+\S+\s+((?:https?)://\S+)",
    re.I,
)
_DOWNLOAD_RUN = re.compile(
    _FETCH
    + r"[^\n]{0,200}?((?:https?|ftp)://[^\s'\"`)]+)[^\n]{0,120}(?:&&|;|\n)\s*(?:sudo\s+)?(?:chmod\s+\+?[0-7x+]+|\./|(?:ba)?sh\s+\S|"
    # ... or installed from the file it saved: an editor extension, a system package, an installer
    r"code\s+--install-extension|(?:dpkg|rpm)\s+-i|apt(?:-get)?\s+install\s+\.?/|installer\s+-pkg|msiexec\b|add-appxpackage\b)"
    # ... or written where it runs or grants access later: login keys, shell start-up files, cron, sudoers, git hooks
    r"|"
    + _FETCH
    + r"[^\n|>]{0,200}?((?:https?|ftp)://[^\s'\"`)]+)[^\n|>]{0,80}(?:>>?|\|\s*(?:sudo\s+)?tee(?:\s+-a)?)\s*"
    r"(?:~/\.ssh/authorized_keys|\S*/authorized_keys|~/\.(?:bashrc|zshrc|profile|bash_profile)|/etc/(?:sudoers|cron|profile)\S*|\S*\.git/hooks/)",
    re.I,
)
# A line that installs or points a package manager somewhere: the manager itself, or a config key
# (`index-url =`, `registry:`, `"url":`, pre-commit's `repo:`), not the English words "add" or "see".
_PACKAGE_LINE = re.compile(
    r"\b(?:pip3?|uv|pipx|poetry|pdm|conda|npm|pnpm|yarn|bun|gem|bundle|cargo|go\s+(?:get|install)|composer|apt(?:-get)?|dnf|yum|"
    r"choco|winget|scoop|nuget|dotnet\s+add|brew|helm|deno|npx)\b|(?<![.\w-])(?:registry|index-url|extra-index-url|find-links|"
    r"replace-with|repositories|sources?|goproxy|proxy|mirror|url|repo|tap)\b[\"']?\s*[:=]|\[registries\]|"
    r"(?:index-url|extra-index-url|registry|find-links)\s+[\"']?https?://|\bgit\+https?://|\bapply\s+from\s*:|"
    r"\bimport\s+(?:url\(|['\"]https?:)|\binclude\s*:\s*[\"']?\s*(?:remote\s*:\s*)?https?:",
    re.I,
)
_GO_MODULE = re.compile(r"\bgo\s+(?:install|get)\s+(?:-\S+\s+)*([\w-]+(?:\.[\w-]+)+)/\S+", re.I)
_INSECURE = re.compile(
    r"strict-ssl\s*=?\s*false|--trusted-host\s+(\S+)|\bgosumdb\s*=\s*off\b|\bgoinsecure\b|node_tls_reject_unauthorized\s*=\s*0|"
    r"--no-check-certificate|git_ssl_no_verify|sslverify\s*=?\s*false|\bgit\s+config\b.{0,40}\bhttp\.sslverify",
    re.I,
)
_HIDDEN_CODE = re.compile(
    r"\b(?:exec|eval|iex|invoke-expression|os\.system|subprocess\.\w+|new\s+function|function)\s*\(?[^\n]{0,240}?"
    r"(?:b64decode|base64|atob|fromhex|unhexlify|codecs\.decode|\[::-1\]|reverse\(\)|fromcharcode|decompress|rot.?13|\.join\()"
    r"|\b(?:base(?:64|32|58)\s+(?:-d|-D|--decode)|xxd\s+-r|openssl\s+(?:base64|enc)\b[^|\n]*\s-d)\b[^\n]*\|\s*(?:sudo\s+)?"
    r"(?:(?:ba|z|da|k)?sh|python[\d.]*|perl|ruby|node)\b"
    r"|-enc(?:odedcommand)?\s+[a-z0-9+/=]{20,}|\biex\s+[\"']?\$\w+\$\w+|\bbase64\s+(?:-d|--decode)\b[^\n]*>\s*(\S+)[^\n]*(?:&&|;)\s*(?:ba)?sh\s+\1",
    re.I,
)


def _runs_remote(text: str, trusted: Iterable[str]) -> bool:
    text = text.replace("\\\n", " ")  # a command continued over lines ("curl ... \ | bash") is one line
    for pattern in (_PIPE, _SUBST, _DOWNLOAD_RUN):
        for m in pattern.finditer(text):
            host = _hosts.urls(next(g for g in m.groups() if g))
            if (
                not host
                or _hosts.outside(host[0][1], trusted)
                or m.group(1).startswith("http://")
                and host[0][1] != "localhost"
            ):
                if not host or _hosts.kind(host[0][1], trusted) != "local":
                    return True
    for m in _REMOTE_EVAL.finditer(text):
        url = next(g for g in m.groups() if g)
        found = _hosts.urls(url)
        if not found or _hosts.outside(found[0][1], trusted):
            return True
    return False


def _installs_from_outside(text: str, trusted: Iterable[str]) -> bool:
    """A package installed, or a package index or registry configured, from a host outside the
    project. An unknown host may be the company's own: MNEMO_TRUSTED_HOSTS names those (a
    registry swapped for a look-alike mirror is how dependency attacks start)."""
    for line in text.splitlines():
        if not _PACKAGE_LINE.search(line):
            continue
        for url, host in _hosts.urls(line):
            if _hosts.outside(host, trusted) or (url.startswith("http://") and _hosts.kind(host, trusted) != "local"):
                return True
        # Go modules are named by their hosts (vanity domains are normal): only a bare address counts.
        if (m := _GO_MODULE.search(line)) and _hosts.kind(m.group(1), trusted) == "address":
            return True
    for m in _INSECURE.finditer(text):
        if not m.group(1) or _hosts.outside(_hosts.host_of(m.group(1)), trusted):
            return True
    return bool(re.search(r"/etc/hosts\b", text) and re.search(r"\b(?:\d{1,3}\.){3}\d{1,3}\s+[\w-]+\.[\w.-]+", text))


_NET_SEND = re.compile(
    r"\b(?:requests|httpx|session|client|axios|https?|got|ky|superagent|aiohttp|urllib3|pool)\.(?:post|put|patch|request)\s*\(|\burlopen\s*\(|\burllib\.request\b|"
    r"\bfetch\s*\(|\bsendbeacon\s*\(|\bxmlhttprequest\b|\bcurl\b[^\n|;&`]*(?:\s-d\b|\s--data\S*|\s-f\b|\s--form\b|\s-t\b|--upload-file)|"
    r"\|\s*(?:nc|ncat|netcat|socat)\s+\S+|\b(?:nc|ncat|netcat)\s+(?:-\S+\s+)*\S+\s+\d{2,5}\b|\binvoke-restmethod\b[^\n]*-body|"
    r"\bwget\b[^\n]*--post-(?:data|file)|\bsocket\.send|\bsmtplib\b|\b(?:curl|wget)\b[^\n]*[?&][\w-]+=\$|"
    r"\b(?:scp|rsync)\b[^\n]*\s[\w.-]*@?[\w-]+(?:\.[\w-]+)+:|require\(\s*['\"]https?['\"]\s*\)\.request\s*\(|"
    r"\.(?:post|put|send)async\s*\(|\bnet::http\.(?:post\w*|start)\s*\(|\bfile_get_contents\s*\(\s*['\"]https?://",
    re.I,
)
_RELATIVE_CALL = re.compile(
    r"[^\n(]{0,40}\(\s*[`'\"](?:/(?!/)|\./|\.\./|\$\{\s*[\w.]*(?:api|base|backend|server|origin|host)\w*\s*\}/)", re.I
)
# Headers the call sets (its own credentials for the API it calls), not ones read from a request.
_HEADERS = re.compile(
    r"headers\s*[:=]\s*\{[^}]*\}|-h\s+['\"][^'\"]*['\"]|['\"]?authorization['\"]?\s*[:=]\s*[^,\n]*", re.I
)
_WHOLE_ENV = re.compile(
    r"\bdict\(os\.environ\)|\bos\.environ\b(?!\s*[\[.]\s*(?:get|\[))|json\.stringify\(\s*process\.env\s*\)|\bprocess\.env\s*[,})]|"
    r"\"\$\(env\)\"|\$\(env\)|\benv\s*\||\bprintenv\s*(?:\||>)|\bget-childitem\s+env:|\bset\s*\|\s*curl",
    re.I,
)


# Secrets as code holds them: a request's own credentials, a connection string, CI's secrets.
_CODE_SECRET = re.compile(
    r"header\w*\.get\(\s*['\"](?:authorization|cookie|x-api-key)|headers\[\s*['\"](?:authorization|cookie)|\bdsn\b|database_url|"
    r"connection[\s_]?string|tojson\(\s*secrets\s*\)|\$\{\{\s*secrets\.|/\.(?:npmrc|netrc|pypirc|git-credentials)\b|"
    r"\.aws/credentials|\.kaggle/|\.docker/config\.json",
    re.I,
)


def _payload(text: str, m: re.Match[str]) -> tuple[str, str]:
    """(what the call sends, where it sends it): for a shell command its own line, pipes into it
    included; for a call in code the surrounding lines of the same paragraph."""
    if re.match(r"curl|wget|\||nc|ncat|netcat|invoke-restmethod|scp|rsync", m.group(0), re.I):
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        line = text[start : len(text) if end < 0 else end]
        return line, line
    para_start = text.rfind("\n\n", 0, m.start()) + 1
    para_end = text.find("\n\n", m.end())
    para_end = len(text) if para_end < 0 else para_end
    return text[max(para_start, m.start() - 300) : min(para_end, m.end() + 300)], text[
        m.start() : min(para_end, m.end() + 300)
    ]


# Where a machine keeps its credentials, and the commands that print them: nothing a project
# sends anywhere except to the service they belong to.
_CREDENTIAL_STORE = re.compile(
    r"~/\.(?:ssh|aws|docker|gnupg|kube|netrc|npmrc|pypirc|git-credentials|config/gcloud|config/gh|cache/huggingface)\b|"
    r"[\"'/]\.(?:npmrc|netrc|pypirc|git-credentials)\b|\.aws/credentials\b|application_default_credentials|\.tfstate\b|"
    r"\bid_(?:rsa|ed25519|ecdsa)\b|\bgh\s+auth\s+token\b|\bnpm\s+token\s+(?:list|ls)\b|\bgcloud\s+auth\s+(?:application-default\s+)?"
    r"print-\w*token|\baws\s+(?:configure\s+export-credentials|sts\s+get-session-token)|\baz\s+account\s+get-access-token|"
    r"\bsecurity\s+find-(?:generic|internet)-password|\bkubectl\s+config\s+view\s+--raw|\bvault\s+(?:read|kv\s+get)\b|"
    # browsers' saved passwords and cookies
    r"\blogin\s+data\b|\blogins\.json\b|\bkey[34]\.db\b|\bcookies\.sqlite\b|[\\/]cookies[\"'\s,]",
    re.I,
)
# A request, an upload or a log handler that carries something off the machine.
_CARRIES_OUT = re.compile(
    _NET_SEND.pattern + r"|\bnet::http\.(?:post\w*|get)|\bfile_get_contents\s*\(|\bhttphandler\b|--remote_header\b|"
    r"\b(?:curl|wget)\b[^\n]*(?:\s-t\s|--upload-file|--data-binary|\s-d\s|\s-f\s)|\bupload\w*\b|"
    # a comment posted to an issue tracker, a name looked up through DNS (the query carries it)
    r"\bgh\s+(?:issue|pr)\s+comment\b|\bgh\s+gist\s+create\b|\b(?:dig|nslookup|drill|resolve-dnsname)\b|"
    r"\binvoke-(?:restmethod|webrequest)\b[^\n]*\s-(?:infile|body)\b",
    re.I,
)


def unsafe_step(s: str) -> bool:
    """A command that weakens the project's safety, written as one (a flag on it: `--admin`,
    `--force`, `-X DELETE`), not a word for it ("CODEOWNERS", "branch protection")."""
    return any(re.search(r"--|\s-[a-z]\b", m.group(0), re.I) for m in _WEAKEN.finditer(s))


def blocks(text: str) -> list[str]:
    """A note's paragraphs (code blocks among them), a command continued over lines as one line."""
    return re.split(r"\n\s*\n(?=\S)", text.replace("\\\n", " "))


def _ships_credentials(text: str, trusted: Iterable[str]) -> bool:
    """A note that reads a credential store (or a command that prints a token) and sends something
    to a host outside the project, in the same block: "upload your ~/.netrc to https://...",
    a hook that base64s ~/.git-credentials into a curl's query, a `make doctor` that appends
    `gh auth token` to a file it then posts."""
    for block in blocks(text):
        store = _CREDENTIAL_STORE.search(block)
        if not store or not _CARRIES_OUT.search(block):
            continue
        line = block[block.rfind("\n", 0, store.start()) + 1 : store.end()]
        if lx.NEGATED_BEFORE.search(line) or re.search(r"\b(?:never|don'?t|do\s+not|must\s+not)\b", line, re.I):
            continue  # "never upload ~/.aws/credentials anywhere"
        if destinations(block, trusted) or _looked_up_outside(block, trusted):
            return True
    return False


# A DNS lookup's name: what it carries is the labels in front of the domain ("$chunk.x.exfil.test").
_LOOKUP = re.compile(r"\b(?:dig|nslookup|drill|resolve-dnsname)\b[^\n|;&]*", re.I)
_LOOKED_UP = re.compile(r"[\w$\-{}.]*?((?:[a-z0-9-]+\.)+[a-z]{2,})\b", re.I)


def _looked_up_outside(block: str, trusted: Iterable[str]) -> bool:
    """A DNS lookup of a name under a domain outside the project (the lookup reaches its servers)."""
    for m in _LOOKUP.finditer(block):
        for name in _LOOKED_UP.finditer(m.group(0)[m.group(0).find(" ") + 1 :]):
            if _hosts.outside(name.group(1).lower(), trusted):  # the pattern's name holds a dot
                return True
    return False


# A call that carries something to where it points, however the code names it: a method that
# sends, posts, uploads or logs, a Swift data task, PowerShell's web request with a body, a syslog
# or socket dial, curl with a form or data (its flag written as a quoted argument too).
_SIDE_SEND = re.compile(
    r"\.\w*(?:send|post|put|upload|publish|report|track|dial)\w*\s*\(|\bdatatask\s*\(|"
    r"\binvoke-webrequest\b[^\n]*-(?:body|infile)\b|\b(?:syslog|net)\.dial\s*\(|"
    r"\bcurl\b[^\n]*[\s\"',](?:-[dft]|--data\S*|--form|--upload-file)\b|\bendpoint_url\s*=",
    re.I,
)
# A credential as code holds it: a variable or key named for it, a request's own authorization
# read back, a keychain or token cache read, the environment file, a role's credentials.
_HELD_SECRET = re.compile(
    r"(?<![\w-])(?:auth|bearer|token|access_?token|refresh_?token|creds|credentials|password|passwd|pass|pw|secret|cookie|"
    r"session_?token|api_?key)(?![\w-])|getheader\(\s*['\"](?:authorization|cookie)|headers\.authorization\b|"
    r"keychain\w*\.read|token_cache|(?<![\w.])\.env\b|\bgetpass\b|\bassume_role\b",
    re.I,
)


def _side_channel(text: str, trusted: Iterable[str]) -> bool:
    """A block of code that holds a credential and sends something to a host outside the project
    (not its auth endpoint): a request filter that also posts the Authorization header to an
    "audit" host, a session hook whose body carries the keychain token, a deploy task that
    uploads `.env`. A credential the call sets for the API it calls (its headers) does not count."""
    for block in blocks(text):
        if not _SIDE_SEND.search(block):
            continue
        dest = destinations(block, trusted)
        ports = (m.group(0) for m in HOSTPORT.finditer(block))
        dest += [p for p in ports if _hosts.kind(_hosts.host_of(p), trusted) == "address"]
        if not dest:
            continue
        held = _HELD_SECRET.search(_HEADERS.sub(" ", block))
        if held and not negated(block, held.start()):
            return True
    return False


def _leaks_in_code(text: str, trusted: Iterable[str]) -> bool:
    """A network call that carries a secret to somewhere that is not an auth endpoint or local."""
    text = text.replace("\\\n", " ")  # a shell command continued over lines is one line
    for m in _NET_SEND.finditer(text):
        window, after = _payload(text, m)
        if _RELATIVE_CALL.match(after):
            continue  # fetch("/api/login"): the page's own server
        found = _hosts.urls(after)
        dest = [u for u, h in found if _hosts.kind(h, trusted) != "local" and not AUTH_PATH.search(u)]
        if found and not dest:
            continue
        payload = _HEADERS.sub(" ", window)
        if _WHOLE_ENV.search(payload) or lx.SECRET_RE.search(payload) or _CODE_SECRET.search(payload):
            return True
    return False


_TOOL = re.compile(r"\bmemory_(?:write|update|delete|forget|rate|feedback)\w*|\bmcp__\w+__\w+", re.I)


def _tool_coercion(s: str) -> bool:
    """Memory or MCP tools used in bulk, with borrowed authority, or against the person's review."""
    tool = _TOOL.search(s)
    if not tool or negated(s, tool.start()):
        return False
    name = tool.group(0).lower()
    bulk = re.search(
        r"\b(?:every|all|any|each)\b|trusted|admin\s+note|replace\s+(?:its|the|their)\s+(?:content|text)|pre-?approved|precedence|rewrite|so\s+that\s+it\s+says|without\s+"
        r"(?:commenting|asking|review)|on\s+behalf|approved|ship\s+it|wontfix|\.env|credentials|secrets?|/etc/|"
        r"(?:don'?t|do\s+not|doesn'?t|no)\s+need\s+(?:a\s+)?(?:human\s+)?reviews?|right\s+away|permission\W{0,3}(?:admin|owner|maintain)|write-all|"
        r"\bmemories\s+(?:tagged|labell?ed|that\s+(?:mention|contain|reference)|mentioning|containing)\b|"
        r"authorized_keys|\bsudoers\b|\bcrontab\b|~/\.(?:bashrc|zshrc|profile|bash_profile)\b",
        s,
        re.I,
    )
    if name.startswith("memory_"):
        return bool(bulk)
    if re.search(r"post|send|upload|message|comment", name) and lx.SECRET_RE.search(s):
        return True  # a secret posted through a chat or tracker tool: it leaves for everyone who reads there
    return (
        bool(bulk)
        and re.search(r"post|send|update|delete|merge|approve|close|write|push|comment|grant|add|create", name)
        is not None
    )


_WEAKEN = re.compile(
    r"\bgh\s+pr\s+merge\b[^\n]{0,40}--admin|\b(?:approve|merge)\w*\s+(?:\w+\s+){0,6}without\s+(?:reading|review|waiting|looking)|"
    r"\bgit\s+push\s+(?:\S+\s+){0,2}(?:-f\b|--force\b)(?!-with-lease)|core\.hookspath|\bpre-commit\s+uninstall\b|--no-verify\b|"
    r"\bskip_\w+=1\b|\bhusky=0\b|\bgh\s+workflow\s+disable\b|continue-on-error:\s*true|\bcodeowners\b|\bbranch\s+protection\b|"
    r"\b(?:disable|disables|disabling|remove|removes|delete|deletes|drop|drops|skip|skips|bypass|bypasses|uninstall|turn\s+off|turns\s+off|"
    r"switch\s+off|comment(?:s|ing)?\s+out)\s+(?:the\s+|all\s+|any\s+|its\s+|their\s+|local\s+|that\s+)?(?:\S+\s+){0,2}[\"'`]?(?:hooks?|pre-commit|tests?|ci|checks?|scans?|"
    r"scanners?|security|signatures?|signature\s+check|protection|2fa|mfa|firewall|network\s*polic\w*|egress|sandbox|linters?|reviews?|"
    r"warnings?|workflows?|jobs?)\b|bypasspermissions|dangerously-skip-permissions|--yolo\b|\"defaultmode\"|"
    r"\brm\s+-(?:rf|fr|r)\s+(?:\S*/)?(?:tests?|specs?|e2e|__tests__)\b|"
    r"\b(?:ack|mute|silence|snooze)\w*\s+(?:\w+\s+){0,4}for\s+\d+\s+(?:days|weeks|months)\b|"
    r"\"allow\"\s*:\s*\[[^\]]*bash\((?:\*|curl|rm|git\s+push|sudo|:)|-?-auto-approve\b|\bkubectl\s+(?:-n\s+\S+\s+)?delete\s+"
    r"(?:networkpolic\w*|psp|podsecuritypolic\w*|clusterrolebinding|secrets?)|\bgrant\s+(?:\S+\s+)?(?:owner|admin)\b|"
    r"permission=(?:admin|maintain)|\bas\s+(?:an?\s+)?(?:owner|admin)\b|\b(?:add|adds|append|appends|write|writes|put|puts|drop|"
    r"edit|edits|set|sets|insert|inserts)\b[^\n]{0,80}(?:~/\.(?:bashrc|zshrc|profile|bash_profile)|\.claude/settings(?:\.local)?\.json)|\bdeny\"?\s*:\s*\[\s*\]|\bsecurity\s+warnings\b"
    r"|-x\s+delete\b[^\n]*/protection\b|\bkubectl\s+delete\s+\S+\s+(?:\S+\s+)*?--all\b|\bpull_request_target\b|permissions:\s*write-all|"
    r"secrets:\s*inherit|authorized_keys\b|\bnopasswd\b|\bgit\s+remote\s+(?:add|set-url)\b|\bgit\s+push\s+https?://|"
    r"\b(?:change|edit|update|rewrite|loosen)\s+(?:the\s+)?(?:assertions?|expected\s+values?|thresholds?|snapshots?)\s+(?:so|until|to\s+match)|"
    r"\bcreate\s+clusterrolebinding\b[^\n]*cluster-admin|\bcommit\s+[^\n]{0,40}--author[= ]|\bcluster-admin\b|"
    r"\bapprove\w*\s+(?:the\s+)?(?:pending\s+)?(?:oauth\s+)?(?:grant|consent|authori[sz]ation)\b|public-read-write|--acl\s+public|"
    r"\ballusers\b|0\.0\.0\.0/0|chmod\s+(?:-r\s+)?777|permitrootlogin\s+yes|-lock=false|--deselect\b|required_status_checks|"
    r"\bprotected_branches\b|\bunprotect\w*\b|\bsecret_scanning\w*\W+(?:\w+\W+){0,3}disabled|\bhistfile=/dev/null|\balias\s+sudo=|"
    r"--yes-always\b|\broles/(?:owner|editor)\b|\bamtool\s+silence\s+add\b|\bclick\s+[\"']?(?:authori[sz]e|allow|approve|accept|grant)\b|"
    r"\bmark\s+(?:the\s+)?(?:check|status|build|job)\s+as\s+(?:passed|passing|green|success\w*)|\bsilence\s+\S+\s+permanently|\ball\s+requested\s+scopes\b|\badmin:org\b",
    re.I,
)
# The assistant's own guard (hooks, permissions) taken out of an agent's settings: no cover needed.
_AGENT_SETTINGS = re.compile(r"\.claude/settings|\.codex/config|\.gemini/settings|opencode\.jsonc?\b|\.cursor/", re.I)
_DROPS_GUARD = re.compile(
    r"\b(?:remove|removes|delete|deletes|drop|drops|disable|disables|strip|strips|empty|clear)\s+(?:\S+\s+){0,3}[\"'`]?"
    r"(?:hooks|pretooluse|permissions|deny|guard|sandbox)\b|[\"']hooks[\"']\s*:\s*\{\s*\}",
    re.I,
)
# What lets an agent act unchecked, as its settings write it: a mode that skips every prompt, a
# policy that never asks, a sandbox that reaches everything, tools approved wholesale.
_AGENT_GRANT = re.compile(
    r"bypasspermissions|skipdangerousmodepermissionprompt|\bapproval_policy\W+never\b|danger-full-access|\bautoapprove\W+true\b|"
    r"dangerously-skip-permissions|--yolo\b|\byolo\W+true\b|allowautomatictasks\W+on\b|\"allow\"\s*:\s*\[[^\]]*\b(?:bash|shell)\(\*\)",
    re.I,
)
# ... that the note has the assistant put in place itself, on the person's machine.
_SELF_APPLY = re.compile(
    r"\b(?:if|when)\s+you(?:'re|\s+are)\s+(?:an?\s+|the\s+)?(?:ai|assistant|agent|copilot|claude|model|llm)\b|"
    r"\b(?:agents?|assistants?|copilot|claude|codex|gemini|cursor)\b\W{0,3}(?:\w+\W+){0,8}?(?:apply|add|set|make|write|update|edit|change|copy)\b"
    r"[^.\n]{0,60}\b(?:user'?s|their|this|it|them|these|yourself|config|settings)\b|\b(?:add|apply|set)\s+(?:them|it|this|these)\s+yourself\b|"
    r"\bmake\s+it\s+match\b",
    re.I,
)
_AS_THE_USER = re.compile(
    r"\bas\s+the\s+user\b|\blogged\s+in\s+as\b|\bwhile\s+the\s+user\s+is\s+(?:logged|signed)\s+in\b", re.I
)


def _grants_itself(text: str) -> bool:
    """Settings that let an agent act unchecked, which the note has the assistant apply itself
    ("if you're an assistant reading this, make it match"): anywhere in the note, since the
    settings block and the sentence that hands it over are often lines apart."""
    grant = _AGENT_GRANT.search(text)
    if not grant or lx.NEGATED_BEFORE.search(text[max(0, grant.start() - 80) : grant.start()]):
        return False
    return any(_SELF_APPLY.search(p) and not lx.NEGATED_BEFORE.search(p) for p in sentences(text))


def _weakens(s: str, around: str) -> bool:
    """An unsafe step, with the cover that makes it an instruction (in the sentence or the ones
    around it: "Do it without asking" often follows the step it covers)."""
    if _AGENT_SETTINGS.search(s) and (m := _DROPS_GUARD.search(s)) and not negated(s, m.start()):
        return True
    m = _WEAKEN.search(s)
    if not m or negated(s, m.start()):
        return False
    cover = (lx.NO_CONFIRM_RE, lx.POLICY_RE, lx.ADDRESSED_RE, lx.CONCEAL_RE, _AS_THE_USER)
    return any(p.search(s) or p.search(around) for p in cover)


_FETCHED = re.compile(
    r"\b(?:requests|httpx|urllib3?|session|client|aiohttp)\.(?:get|request)\s*\(|\burlopen\s*\(|\bnet::http\.get|\bfetch\s*\(|"
    r"\bhttp\.get\s*\(|\bopen-uri\b|\bfile_get_contents\s*\(\s*['\"]?https?:",
    re.I,
)
_EVALS = re.compile(
    r"(?<![\w.])(?:exec|eval)\s*\(|\binstance_eval\b|\bnew\s+function\s*\(|\bexec(?:file)?sync\s*\(|"
    r"\bshell\s*=\s*true\b",
    re.I,
)


def _evals_fetched(text: str) -> bool:
    """Code that evaluates what it fetched (through a variable, on another line)."""
    for para in re.split(r"\n\s*\n", text):
        if _EVALS.search(para) and _FETCHED.search(para):
            return True
    return False


def judge_code(text: str, trusted: Iterable[str] = ()) -> str | None:
    if _HIDDEN_CODE.search(text):
        return "runs code it hides"
    if _evals_fetched(text):
        return "runs code from outside the project"
    if _runs_remote(text, trusted):
        return "runs code from outside the project"
    if _installs_from_outside(text, trusted):
        return "installs from outside the project"
    if _leaks_in_code(text, trusted) or _ships_credentials(text, trusted) or _side_channel(text, trusted):
        return "sends a secret out"
    if _grants_itself(text):
        return "weakens the project's safety under cover of a rule"
    parts = [p for p in sentences(text) if not re.fullmatch(r"\s*(?:```|~~~)\w*\s*", p)]  # a fence says nothing
    for i, s in enumerate(parts):
        around = " ".join(parts[max(0, i - 1) : i] + parts[i + 1 : i + 3])
        if _tool_coercion(s) or (_TOOL.search(s) and _tool_coercion(s + " " + around)):
            return "turns the assistant's tools against the person"
        if _weakens(s, around):
            return "weakens the project's safety under cover of a rule"
    return None
