"""Stored notes that read as instructions to the assistant, and text made safe to show.

mnemo puts memories in front of the model on its own, so a note captured from a poisoned README,
an issue comment or a shared export could steer the assistant in every later session. `assess`
flags a note that speaks to the assistant instead of about the project: overrides ("ignore
previous instructions", in the languages below), forged role or system markers, attempts to
close the block the note is shown in, commands to run from unknown hosts or that destroy,
exfiltration links, requests for credentials, encoded payloads to decode and follow, and
authority or urgency aimed at the AI. It looks through the usual disguises first: zero-width,
bidi and Unicode tag characters, full-width and combining forms, Cyrillic and Greek look-alikes,
l33t digits, s p a c e d and d-a-s-h-e-d letters, base64 and hex. A flag never deletes anything:
the note is stored as written and kept out of what the hooks inject.

`clean` is what any stored text goes through before it is shown inside the hooks' fence:
control, bidi, zero-width and tag characters removed, and anything that looks like the fence's
own marker neutralized, so no memory can close or forge it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

from . import commands, hosts, intent, learned
from . import lexicon as lx
from .disguise import INVISIBLE, findings, leet, views

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# --- what makes a note an instruction to the assistant -----------------------------------------

_AI = (
    r"(?:ai\s+)?(?:assistants?|agents?|ais?|llms?|language\s+models?|models?|bots?|subagents?|copilots?|"
    r"claude|chatgpt|gpt)"
)
_LANG_NEW = (
    r"новые\s+инструкции|nuevas?\s+instrucci\w+|nouvelles?\s+instructions?|neue\s+anweisung\w*|nuov[ae]\s+istruzion\w+|"
    r"novas?\s+instru\w+|nowe\s+polecen\w+|yeni\s+talimat\w*|nieuwe\s+instructies|新的?指令|新しい指示|새로운\s*지시"
)
_LANG_DEVMODE = (
    r"modo\s+(?:de\s+)?desarrollador|mode\s+d[ée]veloppeur|entwicklermodus|modalit[àa]\s+sviluppatore|"
    r"modo\s+desenvolvedor|режим\w*\s+разработчика|开发者模式|開発者モード|개발자\s*모드|tryb\s+dewelopera"
)

# Said on their own, these take over an assistant: no ordinary note needs them.
_STRONG: list[tuple[str, re.Pattern[str]]] = [
    (
        "override",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|every\s+|of\s+)*"
            r"(?:previous|prior|above|earlier|preceding|former|system|original|existing|safety|security|current|other)?\s*"
            r"(?:instructions?|prompts?|rules?|guidelines?|guidance|directions|guardrails|restrictions|polic(?:y|ies)|system\s+prompt|context)\b"
            r"|\bdisregard\s+everything\b|\b(?:prior|previous)\s+(?:context|instructions?)\s+(?:is|are)\s+(?:void|obsolete|cancelled|revoked)"
            r"|\b(?:instructions?|policies|permissions|guidelines)\b.{0,30}\b(?:are|were|is)\s+(?:void|obsolete|revoked|cancelled|outdated|only\s+a\s+test)"
            r"|\b(?:developer|dev|god|jailbreak|dan|unrestricted|maintenance)\s+mode\b|\byou\s+are\s+(?:now\s+)?(?:dan|an\s+ai\s+without|free\s+of)"
            r"|\byou\s+are\s+now\s+['\"]?\w+['\"]?,?\s+an?\s+(?:autonomous|unrestricted|new)|\bact\s+as\s+an?\s+(?:raw|unrestricted|unfiltered)"
            r"|\bpretend\s+(?:that\s+)?you\s+(?:never|did\s+not|didn'?t|have\s+no)\b"
            r"|\bprint\w*\s+(?:out\s+)?(?:the\s+)?(?:full\s+)?(?:text\s+of\s+)?(?:your|the)\s+system\s+prompt\b"
            r"|\breveal\s+(?:your|the)\s+(?:hidden\s+|system\s+)?(?:prompt|instructions)\b"
            r"|\bignore\s+(?:the\s+|this\s+)?(?:user'?s?|conversation|chat|human)\b(?:\s+(?:next\s+)?(?:requests?|instructions?|messages?|rules|wishes))?"
            r"|\bstop\s+(?:following|obeying|listening\s+to|treating)\s+(?:the\s+)?(?:user|human|system)"
            r"|\boutranks?\s+(?:whatever|anything|the\s+user)|\bcomply\s+with\s+(?:all|every|any)\s+(?:requests?|instructions?|commands?)"
            r"|\bnew\s+(?:\w+\s+)?(?:instructions?|directives?|task|orders?)\s+from\s+(?:the\s+)?(?:user|owner|admin\w*|system|developer|maintainers?)"
            r"|(?:^|[.!]\s)(?:agent\s+)?(?:new\s+)?(?:instructions?|directive)\s*(?:\([^)]*\)\s*)?[:.]"
            r"|\b(?:safety|refusal)\s+(?:mode|behaviou?r)\s*(?::\s*off|\s+(?:is\s+)?off)|\bsystem\s+override\s+accepted"
        ),
    ),
    (
        "override",
        re.compile(  # the same, in other languages
            r"ignor(?:a|e|ez|iere|ar|uj)\s+(?:todas\s+|toutes\s+|alle\s+|tutte\s+|todas\s+as\s+)?(?:las\s+|les\s+|le\s+|as\s+|die\s+)?"
            r"(?:instrucciones|instructions|anweisungen|istruzioni|instruções|instrucoes|regeln|règles|reglas|regole)"
            r"|(?:instrucciones|instructions|anweisungen|istruzioni|instruções)\s+(?:anteriores|précédentes|vorherigen|precedenti)"
            r"|(?:vorherigen|bisherigen)\s+anweisungen|vergiss\s+(?:deine|alle)\s+(?:regeln|anweisungen)|oublie\s+(?:tes|vos|toutes)"
            r"|olvida\s+(?:tus|todas)|esque[cç]a\s+(?:suas|todas)|dimentica\s+(?:le|tutte)|"
            + _LANG_NEW
            + "|"
            + _LANG_DEVMODE
            + r"|игнорир\w*|предыдущ\w+\s+инструкц\w*|забудь\w*\s+(?:все|свои|правила)|никаких\s+ограничений"
            r"|忽略|无视|無視|以前の指示|前の指示|指示を無視|이전\S*\s+(?:\S+\s+)?지시|지시를\s*무시|무시하"
            r"|zignoruj|poprzednie\s+instrukcje|önceki\s+talimat|talimatları\s+yok\s+say|negeer\s+(?:alle\s+)?(?:vorige|eerdere)"
        ),
    ),
    (
        "forged role or system marker",
        re.compile(
            r"(?<![\w$])</?\s*(?:system|system[-_ "
            r"]?(?:reminder|prompt|message)|assistant|user|human|developer|instructions?|important[-_ ]instructions|"
            r"tool[-_ ]result|function[-_ ]results?|claude[-_ ]instructions|admin[-_ ]instructions|developer[-_ "
            r"]message)\s*>"
            r"(?!\s*(?:blocks?|tags?|elements?|messages?|lines?|sections?|wrappers?)\b)"
            r"|<\|\s*im_start\s*\|>\s*(?:system|user|assistant)|<\|\s*(?:system|user|assistant)\s*\|>"
            r"|(?<!!)\[/?\s*(?:system|inst)\s*\]|^\s*#{1,4}\s*(?:system|instructions?)\s*:|(?:^|\n)\s*(?:system|human)\s*:\s*\S"
            r"|\"hookspecificoutput\"\s*:|(?:^|\n)\s*\"?additionalcontext\"?\s*:|\"type\"\s*:\s*\"tool_result\"|\"role\"\s*:\s*\"(?:system|developer)\""
            r"|\b(?:system|developer)\s+(?:override|notice|message|update|instruction)\s*(?:\([^)]*\)\s*)?[:\-]|\bpriority\s*[:(]?\s*(?:highest|0|top|critical)\b"
            r"|<!--\s*(?:ai|claude|assistant|agent|llm|system|model)\s*:"
        ),
    ),
    (
        "tries to close its block",
        re.compile(
            r"</\s*[\w-]*(?:note|memor|context|recall|retriev|document|quote|data)[\w-]*\s*>|"
            r"<<\s*/?\s*mnemo|mnemo[-_ ]notes"
            r"|\bend\s+of\s+(?:the\s+)?(?:recalled\s+|stored\s+|retrieved\s+)?(?:notes|memories|memory|context|data|documents?|payload)\b"
            r"|-{3,}\s*end\b|={3,}\s*end\b|\b(?:notes|payload|context|block)\s+(?:has\s+|have\s+|is\s+)?(?:ended|closed|terminated|finished)\b"
            r"|\]\]>|\*{3}\s*new\s+session\s*\*{3}|\b(?:end|begin)_(?:notes|context|user|system|prompt|memory)\w*|\bmemory\s*:\s*end\b"
            r"|\bthe\s+notes\s+are\s+(?:finished|over|done)\b"
        ),
    ),
    (
        "runs something dangerous",
        re.compile(
            r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^|\n]{0,120}(?:https?://|\b[\w-]+\.[\w.-]+/)[^|\n]{0,120}\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
            r"|\biex\s*\(|\binvoke-expression\b|\bbase64\s+(?:-d|--decode)\b[^|\n]*\|\s*(?:ba|z)?sh\b|\$\(\s*(?:curl|wget)\b"
            r"|/dev/tcp/|\bbash\s+-i\s*>|\bnc\s+(?:-\w+\s+)*-e\s|\bncat\b.{0,30}-e\s"
            r"|\brm\s+-(?:rf|fr|r\s+-f)\s+(?:--no-preserve-root\s+)?(?:~/?(?:\s|$|\*)|/(?:\s|$|\*)|\$home\b|~/\.(?:ssh|aws|gnupg|kube|config)\b|"
            r"/(?:etc|usr|var|home|boot|bin|lib)/?(?:\s|$|\*))"
            r"|\bchmod\s+-r\s+777\s+/(?![\w.])|\bmkfs\b|\bdd\s+if=.{0,40}\bof=/dev/|\bfind\s+~\S*\s.{0,60}-delete\b"
            r"|\b(?:nslookup|dig|ping|host)\s+(?:\+\S+\s+)?\S*\$\(|\bufw\s+disable\b|\biptables\s+-f\b|\bsetenforce\s+0\b"
            r"|\bdocker\s+run\b.{0,60}(?:--privileged\b.{0,60}-v\s+/:/|-v\s+/:/)|\bscp\s+-r\s+\.\s+\S+@"
        ),
    ),
    (
        "sends data away",
        re.compile(
            r"!?\[[^\]]*\]\(\s*https?://[^)\s]*[?&][^)]*(?:\{|\$\(|%7b|<[^>]+>|paste|secret|token|key|env|pass|cookie|conversation|prompt|diff|"
            r"user(?:name)?=|host(?:name)?=|cwd=|base64)[^)]*\)"
            r"|\bcurl\b[^\n]{0,80}(?:-d|--data\S*|-f|-t)\s+@(?:-|~|\$home|/etc/|/root/|\S*(?:\.env|ssh|aws|secret|cred|token|passw|id_rsa|id_ed|kaggle|netrc|npmrc|pypirc|gcloud|service[-_]?account|\.docker/config))|\benv\s*\|\s*curl\b|\bprintenv\b[^\n]{0,60}\|"
            r"|\bdocument\.cookie\b"
        ),
    ),
    (
        "asks for credentials",
        re.compile(
            r"\b(?:ask|request|prompt|have)\s+(?:the\s+user|them|him|her|users|the\s+developer)\s+(?:to\s+(?:paste|share|send|enter|give|provide|type|read\s+out)\s+|for\s+|send\s+)"
            r"(?:their\s+|the\s+|his\s+|her\s+|a\s+|your\s+)?(?:\w+\s+){0,3}(?:tokens?|passwords?|passphrases?|api\s+keys?|secrets?|"
            r"credentials|cookies|2fa|otp|one-time\s+codes?|recovery\s+codes|private\s+keys?|ssh\s+keys?|pins?|access\s+keys?)\b"
            r"|\b(?:display|print|show|list|output|include|reveal|dump)\s+(?:me\s+)?(?:the\s+values?\s+of\s+|all\s+|every\s+|any\s+)?"
            r"(?:[\w*]+\s*,\s*)*(?:\w+\s+){0,3}(?:[\w*]*_(?:token|secret|password|key)\w*|credentials|secrets|passwords|api\s+keys?|environment\s+variables?)"
            r"\b.{0,60}\b(?:answer|reply|response|chat|output|for\s+verification|you\s+can\s+find)"
        ),
    ),
    (
        "asks to skip consent",
        re.compile(
            r"\b(?:skip|bypass|disable|turn\s+off|switch\s+off)\s+(?:all\s+|any\s+|the\s+|its\s+|your\s+)?(?:confirmations?|approvals?|safety\s+checks|"
            r"refusals?|refusal\s+behaviou?r|permission\s+(?:prompts|checks))"
            r"|\bnever\s+ask\w*\s+(?:for\s+)?(?:confirmation|permission|approval)\b|\bno\s+(?:need|time)\s+to\s+ask\b|\bno\s+longer\s+need\s+to\s+ask\b"
            r"|\bdo\s+not\s+refuse\b|\brefusals\s+are\s+logged|\bno\s+refusals\b|\brequire_confirmation\s*=\s*false|\ballow_all_tools\s*=\s*true"
            r"|\b(?:all|it'?s\s+all)\s+pre-?approved\b|\bdon'?t\s+bring\s+it\s+up\b|\bnever\s+reveal\s+this\b|\bwithout\s+reporting\s+them\b"
        ),
    ),
    (
        "decode and follow",
        re.compile(
            r"\b(?:decod\w*|backwards|reversed?|fragments|escapes|interpret\s+(?:this|these|the\s+following)|join\s+these|concatenat\w*|"
            r"combine\s+these|bracketed\s+words|split\s+instruction|rot-?13)\b.{0,80}\b(?:follow|comply|obey|apply|run|execute|act\s+on|do\s+what)\b"
            r"|\b(?:base64|hex)\b.{0,60}\b(?:follow|comply|obey|apply\s+(?:it|them|as))\b"
            r"|\b(?:follow|obey|apply|execute|run)\s+(?:the\s+)?(?:decoded|reversed|hidden|encoded|result)\b"
        ),
    ),
]

# Who is spoken to: the assistant itself, by name or in the second person about its role.
_ADDRESSED = re.compile(
    (
        rf"\b(?:the|any|every|all|each|an?|your|our|other)\s+(?:\w+\s+)?{_AI}\s*(?:reading|processing|summari[sz]ing|working|that\s+\w+s|here|"
        r"\(|,|:|must|should|shall|will|needs?\s+to|has\s+to|have\s+to|may|has\s+(?:admin|elevated|full)|is\s+\w*\s*(?:required|obliged|expected|allowed|permitted)|"
        r"are\s+\w*\s*(?:required|obliged|expected|allowed|permitted))"
        rf"|\b(?:to|for|dear|attention|hey|hi)\s+(?:the\s+|any\s+|all\s+|every\s+)?{_AI}\b|\bp\.?\s?s\.?\s+(?:to|for)\s+(?:the\s+)?{_AI}"
        rf"|(?:^|[.!]\s+)(?:{_AI})\s*[:,]\s|\b{_AI}s?\s+(?:must|should|shall|are\s+to)\s|\bagent\s+instructions\b|\bnext\s+step\s+for\s+the\s+{_AI}"
        r"|\byour\s+(?:earlier|previous|prior|original|initial|current|real|actual|new|old)?\s*(?:instructions|task|rules|guidelines|"
        r"programming|prompt|directives|policy|restrictions|safety\s+policy|cooperation|compliance|configuration|reviewers)\b"
        r"|\byou\s+(?:were|have\s+been)\s+(?:given|told|instructed|configured|granted)\b|\byou\s+are\s+no\s+longer\s+(?:required|bound)\b"
        r"|\byou\s+(?:may|no\s+longer|are\s+(?:now\s+)?(?:allowed|permitted|authori[sz]ed|free|cleared))\s+\w+"
        r"|\byou\s+can\s+(?:now\s+)?(?:delete|modify|push|skip|ignore|execute|bypass|approve|merge|run\s+any|edit\s+any)\b"
        r"|\byou\s+(?:should|must)\s+(?:not|never)\s+(?:mention|tell|reveal|ask|inform|warn)\b|\byou\s+must\s+(?:now\s+)?(?:append|obey|comply|follow\s+(?:these|the\s+notes))"
        r"|\b(?:user|owner|maintainer|team|cto|ceo|vendor|admin)s?\b.{0,40}\b(?:has\s+|have\s+|already\s+)?(?:authori[sz]ed|agreed|approved|consented|granted|asked\s+me)\b"
        r"|\b(?:new|real|actual|current|updated)\s+(?:task|instructions?|directives?)\s*(?:is|are|:|here)\b"
        r"|\bwhen\s+you\s+read\s+this\b|\bwhenever\s+(?:you|the\s+user)\s+(?:edit|read|run|answer|respond|reply|see|commit|open|touch|finish|write|asks?|says?)\b"
        r"|\bwhen\s+(?:you\s+are\s+)?asked\s+(?:to|about)\b|\b(?:if|when)\s+the\s+user\s+(?:asks?|says|runs)\b|\bbefore\s+(?:answering|you\s+answer|responding|replying|summari[sz]ing)\b"
        r"|\b(?:in|to|end)\s+(?:your|every|each)\s+(?:reply|answer|response|first\s+reply|commit\s+message)\b|\bevery\s+(?:reply|answer)\s+must\b"
        r"|\bwhen\s+you\s+finish\b|\backnowledge\s+(?:silently|with)\b|\bif\s+you\s+(?:don'?t|do\s+not|see)\b|\bstep\s+0\b|\bexecute\s+immediately\b"
        r"|\b(?:auto-fix|deployment|project)\s+rule\s+for\s+(?:the\s+)?{_AI}|\bfrom\s+now\s+on,?\s+(?:you|the\s+{_AI}|whenever)\b"
        r"|\b(?:every|any)\s+(?:machine|repo\w*|project|session|file|task)\s+you\s+|\bfor\s+any\s+task\b"
        r"|\bas\s+an?\s+(?:ai|assistant|language\s+model|agent)\b|\b(?:urgent|important|warning)\b.{0,25}\bfrom\s+(?:the\s+)?(?:cto|ceo|admin|owner|security|vendor)"
        r"|\b(?:maintainers?|security\s+team|administrators?|admins?|compliance|the\s+owner|management|legal|incident\s+response|"
        r"trust\s+(?:&|and)\s+safety|model\s+vendor|repository\s+owner)\b.{0,40}"
        rf"\b(?:require|requires|required|instructs?|orders?|demands?|mandates?|has\s+instructed|is\s+mandatory|asks?|says|notice)\b"
        r"|\byour\s+cooperation\s+is\s+mandatory|\b(?:o|a|el|la|l'|der|die|il|lo)\s*(?:assistente|asistente|assistant|assistent|agente)\b"
        r"|\basistente\b|ассистент|助手|アシスタント|어시스턴트|\bvocê\s+deve|\btu\s+dois|\bvous\s+devez|\bdu\s+musst|\bdebes\b|\bdevi\b|"
        r"ты\s+(?:должен|теперь)|你必须|a\s+partir\s+de\s+(?:agora|ahora)|\bod\s+teraz\b|\bab\s+jetzt\b|à\s+partir\s+de\s+maintenant|vanaf\s+nu"
    ).replace("{_AI}", _AI)
)
# What such a note asks for that no project note does.
_HARMFUL = re.compile(
    r"\bwithout\s+(?:asking|confirmation|confirming|telling|mentioning|review\w*|explaining|warnings?|permission)|\b(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not)\s+"
    r"(?:ask|tell|mention|inform|warn|confirm|reveal|refuse|report)|\bsilently\b|\bquietly\b|\bno\s+(?:confirmation|questions\s+asked)\b"
    r"|~/\.(?:ssh|aws|docker|config|gnupg|kube|netrc|npmrc|pypirc)|\.env\b|\bid_(?:rsa|ed25519|ecdsa)|\bcredentials?\b|\bcookies?\b"
    r"|\bpasswords?\b|\b(?:access\s+)?tokens?\b|\bsecret\s+(?:access\s+)?keys?\b|\bapi\s+keys?\b|\bone-time\s+code|\bprivate\s+keys?\b"
    r"|\benvironment\s+variables?\b|\bconversations?\b|\bsystem\s+prompt\b|\blast\s+\d+\s+lines\b|\bchat\s+history\b|\bsecrets\b"
    r"|\bforce[-\s]?push|\bpush\s+(?:-f\b|--force\b)(?!-with-lease)|--force\b(?!-with-lease)|-auto-approve|\bsslverify\s+false|\bcredential\.helper|\bhookspath\b|--no-verify\b"
    r"|\bbranch\s+protection\b|\bcodeowners\b|\b(?:approve|merge)\s+(?:\w+\s+){0,3}(?:prs?|pull\s+requests?|changes?)\b"
    r"|\bpush\s+(?:directly\s+)?to\s+main\b|\bskip\s+(?:the\s+)?code\s+review|\bsay\s+it\s+looks\s+good\b|\bregardless\s+of\b"
    r"|\btracking\s+(?:snippet|pixel)\b|\bno\s+known\s+vulnerabilities\b|\bdelete\s+the\s+failing\b"
    r"|\b(?:disable|turn\s+off|switch\s+off)\s+(?:the\s+)?(?:\w+\s+){0,2}(?:tests?|hooks?|ci|scans?|checks?|protection|firewall|2fa|mfa|refusals?)\b"
    r"|\b(?:delete|remove|drop|destroy|wipe|erase|truncate)\s+(?:the\s+|all\s+|any\s+|every\s+)?(?:\S+\s+)?(?:backups?|branch(?:es)?|tests?|schema|"
    r"database|tables?|files?|folders?|directory|history|repo(?:sitory)?|logs?)\b"
    r"|\b(?:any|every|all)\s+(?:files?|pending\s+actions?|commands?|tools?)\b|\boutside\s+the\s+repository\b|\b(?:admin|elevated)\s+(?:privileges|permissions)\b"
    r"|\bno\s+restrictions\b|\baccepts?\s+any\s+(?:bearer\s+)?token\b|\bappend\s+the\s+line\b|\bevery\s+(?:answer|reply|commit)\b"
    r"|\b(?:fetch|download|load|read)\b.{0,40}\b(?:and|then)\s+(?:follow|apply|obey|execute|run)\b|\bopen\s+every\s+file\b"
    r"|\bstop\s+following\b|\bmisspelled\b|\btyposquat|\bforward\s+(?:a\s+copy|every|all)\b|\bevery\s+(?:file|conversation)\s+(?:they|it|you)\s+read\b"
    r"|desactivar|sin\s+pedir|sem\s+(?:pedir|revisar)|sans\s+demander|ohne\s+zu\s+fragen|senza\s+chiedere|без\s+(?:подтверждения|вопросов)"
    r"|bez\s+pytania|無需確認|确认|確認なし|확인\s*없이|no\s+se\s+lo\s+digas|ne\s+le\s+dis\s+pas|todos\s+os\s+pull\s+requests|push\s+directo"
)
# "flags emails that say things like 'disregard your instructions'": a quoted attack is mentioned, not made.
_MENTIONED = re.compile(
    r"(?:\blike|such\s+as|e\.g\.|eg|phrases?|strings?|text|messages?|prompts?|say|says|said|saying|containing|contains|"
    r"flags?|strip|filter|detect\w*|block\w*|reject\w*|pattern|examples?|attempts?|called|named|labelled|labeled)"
    r"[\s:,]{1,3}(?:\w+\s+){0,3}?['\"“‘`][^'\"”’`\n]{3,120}['\"”’`]"
)
# Sending or showing a secret, in any of these languages: flagged whoever is addressed.
_SECRET_TARGET = (
    r"(?:~/\.(?:ssh|aws|docker|gnupg|kube|netrc|npmrc|pypirc|config/google-chrome)\S*|\.env\b|id_(?:rsa|ed25519|ecdsa)\S*|"
    r"credentials\s+file|cookies?\b|api\s+keys?|(?:repository\s+)?secrets\b|access\s+tokens?)"
)
_EXFIL = re.compile(
    r"(?:\b(?:send|post|upload|forward|e-?mail|mail|copy|attach|exfiltrate|leak|sync)\w*|отправ\w*|envi[aeo]\w*|envoie\w*|sende\w*|invia\w*|"
    r"发送|送信|전송|wyślij|gönder|stuur)"
    r".{0,80}"
    + _SECRET_TARGET
    + r".{0,120}(?:https?://|\S+@\S+\.\w+|\bshared\s+drop\b|\bthis\s+(?:webhook|url|link|endpoint)\b)"
    r"|(?:^|\s)" + _SECRET_TARGET + r".{0,40}(?:发送|送信|전송)"
    r"|\b(?:output|print|show|display|dump|reveal|paste|выведи|muestra|affiche|zeige)\s+(?:me\s+)?(?:the\s+)?"
    r"(?:full\s+)?(?:contents?\s+of\s+|содержимое\s+|el\s+contenido\s+de\s+)?(?:the\s+file\s+|файла\s+)?"
    r"(?:~/\.(?:ssh|aws|gnupg)\S*|id_(?:rsa|ed25519|ecdsa)\S*|credentials\s+file|cookies?\b|\.env\b.{0,30}\b(?:in|into)\s+(?:your|the)\s+(?:reply|answer|response|chat))"
)
_FORBIDS = re.compile(r"(?:do\s+not|don'?t|never|must\s+not|mustn'?t|should\s+not)\b", re.I)
_NEGATED = re.compile(r"\b(?:never|not|don'?t|do\s+not|avoid|no|nunca|nie|jamais)\b[^.;!?\n]{0,40}$")
# Dangerous git: said as a rule (never after "never", "don't").
_GIT = re.compile(
    r"\bgit\s+push\s+(?:\S+\s+){0,2}(?:-f\b|--force\b)(?!-with-lease)|\bgit\s+reset\s+--hard\s+head~\d+.{0,40}\bpush"
    r"|\bhttp\.sslverify\s+false|\bcredential\.helper\s+['\"]?store\s+--file\s+/tmp"
)
# Documented installers that pipe a script into a shell from their own host: ordinary notes.
_TRUSTED_PIPES = re.compile(
    r"https?://(?:sh\.rustup\.rs|static\.rust-lang\.org|raw\.githubusercontent\.com/(?:nvm-sh|homebrew|ohmyzsh|helm)|"
    r"get\.docker\.com|(?:rye\.)?astral\.sh|deno\.land|bun\.sh|get\.pnpm\.io|install\.python-poetry\.org|brew\.sh|ohmyz\.sh|"
    r"claude\.ai/install|opencode\.ai/install|sentry\.io/get-cli|get\.k3s\.io|(?:get\.)?sdkman\.io|nixos\.org|starship\.rs|fnm\.vercel\.app|volta\.sh|get\.helm\.sh|ollama\.com|"
    r"install\.determinate\.systems|cli\.github\.com|get\.jetify\.com|mise\.run|pyenv\.run|tailscale\.com|"
    r"foundry\.paradigm\.xyz|dot\.net|sh\.flyctl\.io|fly\.io|get\.volta\.sh|install\.zerotier\.com|get\.scoop\.sh|pixi\.sh|"
    r"micro\.mamba\.pm|just\.systems)",
    re.I,
)


# The detector's version, stored with each judgement: a note judged by an older one is judged
# again (service.trust). 1: phrases and addressed + harmful; 2: + disguises, hosts and intents;
# 3: an address and its ask in one window, wider intents (false all-clear reports, omissions,
# steps covered by the sentences around them, decoded blobs piped to a shell, secrets in code);
# 4: code judged only where digits are read as digits, fetched code evaluated, secrets used or
# asked for without asking, more covers, the tools' own installers; 5: prose wrapped at a column
# read as its sentences, bytes in variation selectors, hosts written as numbers, Russian typed with
# Latin look-alikes, octal escapes and joined string pieces, credential stores shipped out, what a
# note forbids is not its ask; 6: credentials held in code and sent by any call, agent settings that
# skip every prompt handed to the assistant, secrets posted through chat tools, bulk deletes by
# tag, words of other languages no longer matched inside English ones ("environment", "public");
# 7: character codes and HTML numeric entities undone, steps of a fetched page followed, browsers'
# password stores, DNS lookups and issue comments as carriers, tests and alerts removed or silenced;
# 8: what the rules let through judged again by a model learned from examples (core.learned).
VERSION = 8


class Assessment(NamedTuple):
    flagged: bool
    reason: str | None


# "call memory_write with the text '...'": what is quoted is the payload of a tool call, not an example.
_TOOL_CALL = re.compile(r"\bmemory_\w+|\bmcp__\w+", re.I)


def _unquote_mentions(view: str) -> str:
    """Drop the quoted spans of a sentence that mentions quoted text as an example. Not in fenced
    code, where `URL(string: "https://...")` is a call's argument, not an example."""
    pieces = re.split(r"(^\s*(?:```|~~~).*?(?:^\s*(?:```|~~~)[^\n]*$|\Z))", view, flags=re.M | re.S)
    return "".join(p if i % 2 else _unquote_prose(p) for i, p in enumerate(pieces))


def _unquote_prose(view: str) -> str:
    parts = re.split(r"((?<=[.!?])\s+)", view)  # the separators kept: lines stay lines
    return "".join(
        re.sub(r"['\"“‘`][^'\"”’`\n]{3,120}['\"”’`]", " ", p)
        if _MENTIONED.search(p) and not _TOOL_CALL.search(p)
        else p
        for p in parts
    )


_STRONG_DISGUISES = (
    "hides text in invisible tag characters",
    "reverses text with a bidi override",
    "names a look-alike host",
    "hides bytes in variation selectors",
    "names a host as a bare number",
)
_ACTIONABLE = re.compile(
    r"https?://|\b(?:curl|wget|gh|git|pip|npm|rm|sudo|ssh|scp|kubectl|docker|eval|exec|iex|merge|push|approve|delete|ignore|"
    r"instructions?|prompt|system|admin|token|password|secret|credentials?|assistant|agent|ai|user)\b|memory_\w+|mcp__",
    re.I,
)


def _line(view: str, m: re.Match[str]) -> str:
    """The whole line of a match: `iwr https://get.scoop.sh | iex` matched at `iex`."""
    start = view.rfind("\n", 0, m.start()) + 1
    end = view.find("\n", m.end())
    return view[start : len(view) if end < 0 else end]


def _known_pipe(command: str, trusted: bool, trusted_hosts: tuple[str, ...]) -> bool:
    """A documented installer piped into a shell: every host in it is a tool's own or the team's."""
    if "|" not in command and "$(" not in command:
        return False
    found = hosts.urls(command)
    return trusted if not found else not any(hosts.outside(h, trusted_hosts) for _, h in found)


_DOCS_URL = re.compile(
    r"//(?:docs?|developer|developers|learn|wiki)\.|/(?:docs?|reference|manual|guide|api-docs)(?:/|$)", re.I
)


_FULL_URL = re.compile(r"https?://[^\s'\"`)<>\]]+", re.I)


def _sends_outside(window: str, trusted_hosts: tuple[str, ...]) -> bool:
    """A link to a host outside the project and the tools' own, other than documentation."""
    for m in _FULL_URL.finditer(window):
        found = hosts.urls(m.group(0))
        if found and hosts.outside(found[0][1], trusted_hosts) and not _DOCS_URL.search(m.group(0)):
            return True
    return False


_ROLE_TAG = re.compile(r"<\s*(user|human|assistant|developer)\s*>", re.I)


def _placeholder_tag(view: str, m: re.Match[str]) -> bool:
    """`<user>` in the middle of a line with no `</user>` anywhere: a placeholder in a command."""
    tag = _ROLE_TAG.fullmatch(m.group(0).strip())
    if not tag:
        return False
    line_start = view.rfind("\n", 0, m.start()) + 1
    return bool(view[line_start : m.start()].strip()) and f"</{tag.group(1).lower()}" not in view


_ENGLISH = re.compile(
    r"\b(?:the|and|to|of|is|are|for|with|your|you|it|in|on|this|that|be|by|we|our|into|from|while|when|which|before|after|"
    r"should|must|would|could|been|has|have|were|its|their|they|them|there|these|those|what|will|not|or|if|then)\b"
)
_NOT_ADDRESSED = re.compile(r"\b(?:not|nor|no|never)\s+$")


def _names_assistant(view: str, trusted_hosts: tuple[str, ...]) -> str | None:
    """The assistant named in a language no rule knows the grammar of: beside a link out of the
    project (judged by the link, as a note addressed to it is), or in a sentence that is not
    English, names a secret and negates nothing ("asistentul cere parola utilizatorului"; a rule
    that protects a secret says "never" in some language)."""
    for a in lx.ASSISTANT_RE.finditer(view):
        if _sends_outside(view[max(0, a.start() - 300) : a.end() + 300], trusted_hosts):
            return "names the assistant beside a link out of the project"
    for s in intent.sentences(view):
        if (
            lx.ASSISTANT_RE.search(s)
            and (lx.SECRET_RE.search(s) or re.search(r"\.pem\b|\bvpn\b", s))
            and not lx.NEGATION_RE.search(s)
            and len(_ENGLISH.findall(s)) < 2
        ):
            return "names the assistant and a secret, in a language the rules do not read"
    for block in commands.blocks(view):  # an unsafe step handed to it: force-push, --admin, skip permissions
        if not lx.ASSISTANT_RE.search(block):
            continue
        for s in intent.sentences(block):
            if commands.unsafe_step(s) and not lx.NEGATION_RE.search(s) and len(_ENGLISH.findall(s)) < 2:
                return "names the assistant and an unsafe step, in a language the rules do not read"
    return None


def _legacy(view: str, trusted: bool, trusted_hosts: tuple[str, ...]) -> str | None:
    """The first rules: phrases that take over an assistant on their own, and addressed + harmful."""
    for reason, pattern in _STRONG:
        m = pattern.search(view)
        if m is None:
            continue
        if reason == "runs something dangerous" and _known_pipe(_line(view, m), trusted, trusted_hosts):
            continue
        if reason == "asks for credentials" and intent.negated(view, m.start()):
            continue  # "don't ask the user for real credentials"
        if reason == "forged role or system marker" and _placeholder_tag(view, m):
            continue  # "login <user> password <token>": a placeholder, not a role

        return reason
    m = _EXFIL.search(view)
    if m and not _NEGATED.search(view[: m.start()]):
        return "sends or shows a secret"
    for a in _ADDRESSED.finditer(view):
        if _NOT_ADDRESSED.search(view[max(0, a.start() - 12) : a.start()]):
            continue  # "not Slack, not the AI assistant, not a ticket": named as a place a secret must not go
        # What is asked comes with the address: in its sentence or the next, not anywhere in a long
        # note; after a label ("Claude:", "给 AI 助手："), only what follows it.
        label = re.match(r"\s*[:：]", view[a.end() - 2 : a.end() + 2]) or re.match(r"\s*[:：]", view[a.end() :])
        # An address that opens its own sentence ("... in the code. Claude, use yarn"): what it asks
        # follows it; the sentence before is the note's own statement.
        opens = re.match(r"[.!?;。！？]\s|\n", a.group(0)) is not None
        start = a.start() if label or opens else max(0, a.start() - 120)
        window = view[start : a.end() + 300]
        for h in _HARMFUL.finditer(window):
            # "Never force-push branches you didn't create", "don't request more GPUs without
            # asking": what the note forbids is a rule, not the ask.
            before = view[max(0, start + h.start() - 60) : start + h.start()]
            if not _FORBIDS.match(h.group(0)) and _NEGATED.search(before):
                continue
            return "addresses the assistant and asks for something a project note never does"
    for a in lx.ADDRESSED_RE.finditer(view):  # in any language: then only a link out counts
        if _sends_outside(view[a.start() : a.end() + 300], trusted_hosts):
            return "addresses the assistant and asks for something a project note never does"
    return None


def assess(text: str, trusted_hosts: Iterable[str] = ()) -> Assessment:
    """Whether a note reads as an instruction to the assistant, and the first reason why: by the
    rules, then by the model learned from examples (core.learned) for what the rules let through.
    `trusted_hosts`: the team's own hosts, beside the tools' documented ones (core.hosts)."""
    verdict = by_rules(text, trusted_hosts)
    if verdict.flagged or not isinstance(text, str):  # an empty text is too short for the model
        return verdict
    reason = learned.judge(text)
    return Assessment(True, reason) if reason else verdict


def by_rules(text: str, trusted_hosts: Iterable[str] = ()) -> Assessment:
    """The rules' verdict alone."""
    if not isinstance(text, str) or not text.strip():
        return Assessment(False, None)
    trusted_hosts = tuple(trusted_hosts)
    disguised = findings(text)
    for found in disguised:
        if found in _STRONG_DISGUISES:
            return Assessment(True, found)
    seen = views(text)
    trusted = _TRUSTED_PIPES.search(seen[0]) is not None  # judged as written: l33t undoing garbles hosts
    garbled = leet(seen[0])
    for view in seen:
        view = _unquote_mentions(view)
        code = view == seen[0] or view != garbled
        reason = (
            _legacy(view, trusted, trusted_hosts)
            or intent.judge_prose(view, trusted_hosts)
            or (commands.judge_code(view, trusted_hosts) if code else None)
        )
        if not reason and code:  # not in a view that read digits as letters ("14:" as "ia:")
            reason = _names_assistant(view, trusted_hosts)
        if reason:
            return Assessment(True, reason)
    if disguised and _ACTIONABLE.search(seen[0]):
        return Assessment(True, disguised[0])
    return Assessment(False, None)


# --- showing stored text inside the fence ------------------------------------------------------

FENCE = "mnemo-notes"
_FENCE_LIKE = re.compile(r"<\s*/?\s*mnemo[\w\s-]*>|mnemo-notes[-\w]*", re.I)


def clean(text: str) -> str:
    """Stored text as it may be shown to the model: no control, bidi, zero-width or tag
    characters, and nothing that looks like the fence's marker."""
    text = INVISIBLE.sub("", _CONTROL.sub(" ", text))
    return _FENCE_LIKE.sub("[marker removed]", text)
