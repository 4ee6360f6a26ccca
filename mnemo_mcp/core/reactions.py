"""Is the user's next message a reaction to the previous answer? A transparent rule-based
classifier: worked / failed / partial / unknown, with the phrase that decided it.

Precision first: a wrong update teaches the store the opposite of the truth, a missed one
teaches nothing. So anything that is not clearly a reaction is `unknown`: questions,
instructions, reported speech ("users report it doesn't work"), words inside quotes or code,
plans to try later. The rules, in order:

1. Strip code blocks, inline code and quoted text (a pasted test summary still counts: "5 passed").
2. A message that opens with a question or an instruction and carries no reaction cue before it
   is unknown ("how do I fix the failing test?", "add a test that checks it fails").
3. Cues are collected over the rest: success claims ("works now", "tests pass", "no errors
   now"), politeness ("thanks", "perfect"), failures ("still failing", "doesn't work", "same
   error", "you broke X", "no, that's wrong"), strong failures ("worse", "revert that"), and
   partial cues ("almost", "better but", "3 of 5 pass").
4. partial cue -> partial; a failure with a success claim (and no strong failure) -> partial
   ("compiles now, but segfaults"); a failure -> failed (politeness does not rescue it: "thanks,
   but it still crashes", "great, now nothing compiles"); a success claim or politeness ->
   worked, unless the user says they have not tried it yet; otherwise unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WORKED, FAILED, PARTIAL, UNKNOWN = "worked", "failed", "partial", "unknown"
LABELS = (WORKED, FAILED, PARTIAL, UNKNOWN)


@dataclass(frozen=True)
class Reaction:
    label: str
    cue: str | None = None


def _rx(*patterns: str) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


# Common spellings and typos of the words the rules hinge on.
WORK = r"(?:works?|worked|working|wroks?|wokrs?|workd|funktioniert|marche|funciona|funcionou|работает)"
STILL = r"(?:still|sitll|stil|stll)"
THANKS = (
    r"(?:thanks|thank\s*you|thx|thnx|thanx|thnaks|tahnks|tysm|ty|cheers|danke|merci|gracias|obrigad[oa]|grazie|"
    r"спасибо|ありがとう|谢谢)"
)
# "doesn't" has no word boundary before "n't": spell the negated auxiliaries out.
NEG = (
    r"(?:\b(?:not|never|nicht|pas|no|не|sin)\b|"
    r"\b(?:does|did|do|is|was|were|are|has|have|had|could|would|wo|ca|should)n'?t\b)"
)

# Phrases that contain failure words but report success: matched first, then removed.
NEGATED_NEGATIVE = _rx(
    r"\b(?:no|zero|0)\s+(?:more\s+)?(?:errors?|failures?|warnings?|crash(?:es)?|exceptions?|issues?|restarts?|timeouts?|"
    r"oom\w*|alerts?|flakes?|retries|5\d\ds|4\d\ds|fatals?|panics?)\b(?:\s+(?:now|anymore|any\s+more|overnight|since))?",
    r"\b(?:errors?|crash(?:es)?|restarts?|timeouts?|fatals?|panics?|warnings?|[45]\d\ds|flakes?)\s+(?:are\s+|is\s+)?gone\b",
    r"\bno\s+longer\s+(?:crash(?:es)?|fails?|failing|breaks?|hangs?|errors?|throws?)\b",
    r"\bnothing\s+(?:broke|breaks|failed|fails)\b",
    r"\b(?:hasn't|has\s+not|haven't|didn't|did\s+not)\s+(?:failed|crashed|broken|errored)\b(?:\s+once)?",
    r"\bcan't\s+reproduce\b.*\b(?:anymore|any\s+more|now)\b",
    r"\b(?:the\s+)?(?:error|bug|crash|issue|warning|exception|problem|failure)s?\s+(?:is|are)\s+(?:gone|fixed|resolved)\b",
    r"\bnot\s+(?:failing|crashing|broken)\s+(?:anymore|any\s+more)\b",
    r"\b(?:doesn'?t|does\s+not|won'?t|isn'?t)\s+(?:fail|crash|break|hang|error|flake)\w*\s+(?:anymore|any\s+more)\b",
    r"\bnot\s+bad\s+at\s+all\b|\bcan'?t\s+complain\b",
)

SUCCESS = _rx(
    rf"^(?:it\s+|that\s+|this\s+|ok\s+|yep\s+|yes\s+|fine,?\s+it\s+|✅\s*)?{WORK}(?:\s+now|\s+perfectly|\s+great|\s+fine|\s+again)?\b(?!\s+(?:for|on|with|in|locally|until))",
    rf"\b{WORK}\s+(?:now|perfectly|like\s+a\s+charm|great|fine|again|jetzt)\b",
    rf"\bit\s+{WORK}\s*!",
    r"\b(?:it|that|this|the\s+\w+)\s+(?:now\s+)?(?:works|worked|runs|passes|loads|compiles)(?=\s*(?:$|[.!,;]|now\b|again\b|fine\b|perfectly\b|great\b|too\b))",
    r"\b(?:fires|triggers|shows|appears|renders|responds|connects)\s+(?:up\s+)?now\b",
    r"\b(?:that|this|it)\s+(?:did\s+it|did\s+the\s+trick|was\s+it|was\s+the\s+(?:problem|issue|fix|culprit))\b",
    r"\b(?:that|this|it|you)\s+(?:fixed|solved|resolved)\b",
    r"\b(?:fixed|solved)(?:\s+it)?\s*[.!]|^(?:fixed|solved)\b|\bthat\s+fixed\b",
    r"\b(?:tests?|build|builds|ci|pipeline|checks?|lint|everything)\s+(?:(?:all|now)\s+)?(?:pass(?:es|ed)?|passing|green|succeeds?|succeeded)\b",
    r"\b(?:all|both)\s+green\b|\bgreen\s+now\b",
    r"^(?!.*\bfail).*\b\d+\s+passed\b",
    r"\b(?:compiles|builds|runs|loads|deploys|starts)\s+(?:now|again|fine|cleanly|instantly)\b|\bfinally\s+it\s+(?:runs|works|compiles)\b",
    r"\bit\s+(?:compiles|runs|builds)\s+now\b",
    r"\b(?:ran|went)\s+(?:through|cleanly|fine|smoothly)\b",
    r"\b(?:lgtm|ship\s+it|looks\s+good(?:\s+to\s+me)?|good\s+call|exactly\s+what\s+i\s+needed|yes!?\s+that'?s\s+it|that'?s\s+it!)",
    r"\bconfirmed\b",
    r"\bit\s+(?:builds|compiles|runs|works|passes)\s*!|\b(?:nailed\s+it|spot\s+on|that'?s\s+correct|that\s+works\s+for\s+me|it\s+actually\s+works)\b",
    r"\b(?:correctly|fine|cleanly)\s+now\b|\bis\s+happy\s+now\b",
    r"👍|✅|🎉|🙌|👌",
    # How developers report a fix (capture dev set): "CI is green", "passing now", "X did it",
    # "GPG_TTY was it", "tsc is clean", "up and running", "27 passing", "and it builds".
    r"\b(?:is|are|'s)\s+(?:all\s+)?green\b|\ball\s+\d+\s+green\b",
    r"\b(?:passes|passing|passed)\s+now\b|\bnow\s+(?:passes|passing)\b",
    r"(?<!who )(?<!what )\b(?:did|fixed)\s+it\b(?!\s*\?)",
    r"\b(?:was|were)\s+it\b(?!\s*\?)|\bthere\s+it\s+was\b|\bthat'?s\s+(?:it|the\s+trick)\b(?!\s*\?)",
    r"\b(?:is|are)\s+clean\b|\b(?:builds|compiles)\s+clean\b|\bup\s+and\s+running\b",
    r"\b(?:is|are)\s+(?:up|back)\s*(?:$|[.!,;]|again\b|now\b)",
    r"\b\d+\s+(?:passing|tests?\s+run)\b|\bcompile\s+and\s+pass\b|\bcompiles\s+and\s+passes\b",
    r"\b(?:warnings?|errors?)\s+(?:is\s+|are\s+)?gone\b",
    r"\b(?:and|now)\s+(?!nothing\b|none\b|no\b)(?:it|the\s+\w+|\w+)\s+(?:builds|compiles|starts|applied|imports\s+fine|runs)\b(?=\s*(?:$|[.!,;]|now\b|again\b|fine\b|clean\b))",
    r"\b(?:upgrade|migration|release|deploy)\s+(?:ran|runs|applied|published)\b",
    r"^(?!.*\bhow\b)(?!.*\bbut\b).*?(?<!not )(?<!n't )(?<!never )\b(?:works|worked)\b(?=\s*(?:$|[,.!;]))",
    # Terse reports that it works where it is used (attribution stories' tune part): "all good",
    # "it's live now", "signups work", "restarts stopped", "green as well", "ci checkout passes".
    r"\ball\s+good\b|\b(?:is|are|it'?s)\s+live\b|\bis\s+there\s+now\b|\bthe\s+right\s+\w+\s+now\b",
    r"^(?!.*\bhow\b)(?!.*\bbut\b).*?\b\w+s\s+work(?:\s+(?:now|again|fine))?\s*(?:$|[,.!;])",
    r"\b(?:restarts?|crash(?:es|ing)?|errors?|warnings?|failures?|flakes?|timeouts?|retries|alerts?|502s?|500s?)\s+(?:have\s+)?stopped\b",
    r"\bgreen\s+(?:as\s+well|too|again|everywhere)\b|\bin\s+a\s+row\b.{0,20}\bgreen\b|\bgreen\b.{0,20}\bin\s+a\s+row\b",
    r"^(?!.*\b(?:but|still|fail\w*|error\w*|broken|crash\w*)\b)(?:\w+\s+){0,3}?\w+\s+(?:passes|passed|succeeds|succeeded)\s*(?:$|[,.!;]|now\b|again\b|too\b)",
    r"^(?:it\s+)?(?:builds|compiles|runs|passes|deploys|starts|works)\s*[,.!]",
    r"^(?:deployed|redeployed|pushed|merged|released|rebuilt)\s*[,.]?\s*(?:ok|okay|fine|all\s+good)\b",
    # A state back where it should be, or work that went out: "green" as a clause of its own,
    # "release went out", "pushed fine", "memory back to ~150M", "... fixed".
    r"(?:^|[,.!;:]\s*)(?:all\s+)?green(?:\s+(?:now|again|too|lol))?\s*(?:$|[,.!;]|[^\w\s])",
    r"\b(?:release|deploy(?:ment)?|rollout|migration|build|pr|fix|hotfix|upgrade)\s+went\s+(?:out|through|in|fine|ok|okay|smoothly)\b",
    r"\b(?:pushed|deployed|merged|shipped|installed|applied|booted|started)\s+(?:fine|ok|okay|cleanly|without\s+(?:issues?|problems?|errors?))\b",
    r"\bback\s+to\s+(?:normal|~?\d[\w.,]*|where\s+it\s+was|green)\b",
    r"\b(?:fixed|solved|resolved|sorted)\W*$",
    r"\bnice\W*$",
)

# A state reported as it is now, where it is used: "pod is running now", "downloads properly now",
# "comments are on now", "reset mails have https links now". Only a plain statement about a
# thing (not the user: "i'm on it now"), with no sign of trouble in it: "builds take 10 min now",
# "the sidebar is gone now" and "only on mac now" are complaints.
STATE_NOW = re.compile(
    r"(?:^|[.!;,]\s+)(?!(?:i|i'm|im|we|we're|you|let's|lets|ok|okay|so|and|but|then|now)\b)"
    r"(?P<state>[a-z][\w/#.'-]*(?:\s+[\w/#.'=-]+){1,6}?)\s+now\s*(?:too|as\s+well|again)?\s*(?:[.!]+|,?\s*$)",
    re.IGNORECASE,
)
TROUBLE = re.compile(
    rf"{NEG}|\b(?:nothing|none|nobody|no\s+one|fail\w*|error\w*|broke\w*|crash\w*|hang\w*|stuck|slow\w*|red|down|gone|missing|empty|blank|"
    r"wrong|worse|weird|strange|random\w*|only|takes?|took|dies|died|dead|timeouts?|times?\s+out|twice|every|"
    r"duplicat\w*|again|still|lost|off|without|instead|even|all\s+of|\d{3}s?|[45]\d\d\w*|warn\w*|"
    r"complain\w*|refus\w*|reject\w*|denied|block\w*|loop\w*|leak\w*|spik\w*|queu\w*|wait\w*|flak\w*|"
    r"need\w*|want\w*|can|should|must|could|would|will|might|\w+ing\s+it|going|about\s+to|right|"
    r"how|what|why|where|when|which|who)\b|\b(?:and|or|but|to|for|with|of|so|the|a|an)$|"
    r"\d+(?:\.\d+)?\s*(?:[kmgt]i?b|ms|s|secs?|seconds?|mins?|minutes?|h|hours?|%|x)\b",  # "uses 4GB now"
    re.IGNORECASE,
)


def _state_now(text: str) -> str | None:
    if NOT_TRIED.search(text):
        return None
    for m in STATE_NOW.finditer(text):
        if not TROUBLE.search(m.group("state")):
            return m.group(0).strip(" .!,;")
    return None


POLITE = _rx(
    rf"^{THANKS}\b",
    rf"\b{THANKS}(?:\s+(?:a\s+lot|so\s+much|again))?\s*[.!]*\s*$",
    rf"[,.!]\s*{THANKS}\b",
    r"^(?:perfect|awesome|great|nice|beautiful|brilliant|excellent|amazing|cool|sweet|wonderful)\b",
    r"\byou'?re\s+a\s+(?:lifesaver|legend|star)\b",
    r"🙏",
)

FAILURE = _rx(
    rf"\b{STILL}\b(?:\s+\w+){{0,4}}?\s+(?:{NEG}|fail\w*|broken|broke|wrong|the\s+same|same|slow\w*|crash\w*|throw\w*|gets?|getting|seeing|an?\s+(?:issue|problem|error)|errors?|there|happen\w*|return\w*|hang\w*|show\w*|runs?\s+out|renders?\s+empty|500s?|404s?)\b",
    rf"\b(?:is|are|was|it'?s|keeps?)\s+{STILL}\b",
    rf"^\W*{STILL}\W*$|(?:^|\n)\s*{STILL}\s*[:.!]|\b{STILL}\s*$",
    rf"{NEG}\s+(?:\w+\s+)?(?:{WORK}|wrok|help(?:ed|s)?|fix(?:ed|es)?|change[ds]?|compiles?|runs?|solved?|do\s+anything|make\s+a\s+difference)\b",
    r"\b(?:is|are|does|do)n'?t\s*[.!]*$",
    r"\bbut\s+(?:it\s+|the\s+\w+\s+|now\s+)?(?:\w+\s+){0,3}?(?:crash\w*|segfaults?|fails?|failing|hangs?|throws?|errors?|broken|wrong|slow|missing|still|off\s+by|blank|empty|lost|doesn'?t|isn'?t|won'?t|not)\b",
    r"\bnow\s+there'?s\s+(?:a\s+)?(?:different|another|new)\s+(?:one|error|issue|problem|bug)\b|\b(?:different|another|new)\s+error\b",
    r"\b(?:does|did|do|is|was)nt\s+(?:work|wrok|help|fix|change|compile)",
    r"\bno\s+(?:luck|difference|change|dice|effect)\b|\bnothing\s+changed\b|\bnothing\s+(?:works|compiles|runs|loads)\b",
    r"\b(?:same|identical)\s+(?:error|issue|thing|problem|result|output|failure|exception|behaviou?r|crash)\b|\bthe\s+same\b\s*[.!]*\s*$",
    r"\b(?:it|that|this|the\s+\w+)\s+(?:crash(?:es|ed)?|hangs?|fails?|failed|segfaults?|throws?|errors?\s+out)\b(?!\s+(?:when|if))",
    r"\bnow\s+(?:it\s+|there\s+(?:are|is)\s+|i\s+get\s+|i'?m\s+getting\s+|every\s+\w+\s+)?.{0,30}\b(?:errors?|fails?|failing|broken|crash\w*|hangs?|null|wrong|blank|empty|complain\w*|off\s+by)\b",
    r"\bgetting\s+this\s+now\b|\bcauses\s+an?\s+(?:infinite|endless)\b",
    r"\b(?:that'?s|this\s+is|it'?s)\s+(?:wrong|incorrect|not\s+(?:it|right|correct|what\s+i\s+(?:asked|wanted|meant))|not\s+how)\b",
    r"\bthat'?s\s+not\s+how\b|\bnot\s+what\s+i\s+(?:asked|wanted|meant)\b|\bwrong\s+(?:file|function|one|place|method|branch|answer)\b",
    r"^(?:no|nope)\b[,.!]*\s+(?:that|this|it|you|i\s+meant|don'?t|not|still|same|the)\b|^no\s+no\b",
    r"\byou\s+(?:misunderstood|changed\s+the\s+wrong|deleted|removed|broke|hallucinated)\b|\bhallucinat\w*\b",
    r"\bwhy\s+did\s+you\s+(?:delete|remove|break|drop|revert)\b",
    r"\bsigue\s+fallando\b|\bne\s+marche\s+(?:toujours\s+|plus\s+)?pas\b|\bfunktioniert\s+(?:immer\s+noch\s+)?nicht\b|\bno\s+funciona\b|\bnão\s+funciona\b|\bstesso\s+errore\b|сломал",
    r"\b(?:another|a\s+new)\s+(?:segfault|crash|error|bug|exception|failure|regression)\b",
    r"\b(?:it|that|this|the\s+\w+)\s+(?:only|just|now|always|also)\s+(?:crash(?:es|ed)?|hangs?|fails?|segfaults?|times?\s+out)\b",
    r"\b(?:i\s+)?don'?t\s+think\s+(?:that'?s|this\s+is|it'?s)\s+(?:right|correct)\b|\bnot\s+quite\s+what\s+i\b|\byou'?re\s+(?:misreading|misunderstanding|wrong)\b",
    r"\b(?:red|failing|broken)\s+again\b|\bit\s+was\s+working\s+before\b|\bworked\s+(?:fine\s+)?before\s+(?:your|the|this)\b|\breintroduced\b|^regression\b",
    r"\bsame\s+(?:traceback|stack\s*trace|\d{3})\b|\bidentical\s+to\s+before\b|\bwhat\s+i\s+get\s+now\b|\btimes\s+out\s+now\b|\bnow\s+it\s+times\s+out\b",
    r"\bfor\s+nothing\b|👎|❌|🤦",
    r"\bsigue\s+sin\b|\bне\s+работает\b|还是",
    # "still says X", "still all skipped", "same ImproperlyConfigured error", "fails the same way".
    rf"\b{STILL}\s+(?:\w+\s+)?(?:says|shows|skip\w*|undefined|refuses|prints|gives|rejects|missing|red)\b",
    rf"\b{STILL}\s+\w*(?:error|exception)\w*",
    r"\bsame\s+(?:\S+\s+){0,4}?(?:error|exception|warning|failure)\b|\bsame\s+\w*(?:error|exception)\w*",
    r"\bsame\s+(?:connection\s+refused|permission\s+denied|[a-z]*\d+[a-z\d]*|[a-z]+(?:inuse|notfound)|"
    r"e(?:conn\w+|addr\w+|noent|acces|perm|timedout|pipe|notfound))\b",
    # what persists, said with its own verb or status: "still doubles", "still 419s"
    rf"\b{STILL}\s+(?:[45]\d\d\w*|(?!(?:works|passes|loads|compiles|runs|builds|succeeds|needs|wants|seems|looks|sounds|progress|applies|holds|matters|counts|stands|does\s+the\s+(?:job|trick))\b)[a-z]{{3,}}s)\b(?!\s+(?:fine|ok|okay|great|correctly|well))",
    r"\bfails?\s+(?:\w+\s+)?(?:the\s+)?same\b|\bthe\s+same\s+way\b|\bexact(?:ly)?\s+(?:the\s+)?same\b",
    r"\b(?:gets\s+)?killed\s+(?:even\s+)?(?:earlier|again|still)\b|\btimes\s+out\b.{0,40}\binstead\b",
    # Terse reports of the same failure (attribution stories' tune part): "still times out",
    # "still 413", "same panic, ...", "ci failed again", "E0277 again", "reclone did nothing".
    rf"^\W*{STILL}\s+(?!\w+ing\b)(?!(?:works?|fine|good|green|pass\w*|ok|okay|clean|fast|quick|happy|nice|need|needs|want|"
    r"think|have|has|had|a\s+question|curious|wondering|unsure|not\s+sure|sounds|progress|applies|makes\s+sense)\b)\S+(?:\s+\S+)?",
    r"^\W*same\s*(?:[,.!:]|\S+(?:\s+\S+)?\s*[,.!:]|\S+\s*$)",
    r"\b(?:failed|fails|failing|crash(?:ed|es)?|times?\s+out|timed\s+out|panick?(?:ed|s)?|errors?\s+out)\s+again\b",
    r"\b[a-z]+\d{3,}[a-z\d]*\s+again\b|\b(?:4\d\d|5\d\d)s?\s+again\b",
    r"\b(?:did|does|changed|fixed)\s+nothing\b|\bmade\s+no\s+difference\b",
    r"\bnot\s+like\s+(?:this|that)\b|\bdo\s+it\s+(?:properly|right|the\s+(?:normal|right|proper|usual)\s+way)\b",
    r"\b(?:refuses|rejects|refused|rejected)\s+(?:it|that|this|the\s+\w+)\b",
    # "tests panic now", "the worker dies now", "now it panics": what broke, said as a state.
    r"\b\w+\s+(?:panic(?:s|ked)?|crash(?:es|ed)?|segfaults?|hangs?|dies|died|breaks?|fails?)\s+now\b",
    r"\bnow\s+(?:it\s+|they\s+|the\s+\w+\s+)?(?:panic(?:s|ked)?|dies|died|segfaults?)\b",
)

STRONG_FAILURE = _rx(
    r"\b(?:that|this)'?s\s+(?:even\s+|much\s+|way\s+|a\s+lot\s+)?worse\b",
    r"\b(?:it'?s|that|this|got|even|way|much)\s+(?:made\s+it\s+)?worse\b|\bmade\s+it\s+worse\b|\bworse\s+(?:now|than)\b",
    r"\b(?:revert|undo)\s+(?:that|it|this|the\s+change)\b|\b(?:you\s+)?(?:broke|broken)\s+(?:the|my|prod|it|everything)\b|\bbroke\b",
    r"\bthanks\s+for\s+(?:deleting|breaking|removing|wiping|nothing|making\s+it\s+worse)\b",
    r"\bjk\b|\bjust\s+kidding\b|\byou\s+(?:deleted|removed|broke|wiped)\b|\bthat'?s\s+cheating\b|\bonly\s+because\s+you\b",
)

PARTIAL_CUE = _rx(
    r"^\W*(?:almost|almst|allmost|nearly|closer|partly|partially|sort\s+of|kinda|kind\s+of|mostly|half|casi|fast)\b",
    r"\balmost\s+(?:there|works?|done)\b|🤏",
    r"\b(?:better|closer|progress)\b[,!.]*\s*(?:but|only|just)\b|\bprogress!",
    # "fewer restarts but still 3 OOMKilled", "way fewer now but still some", "better i guess but"
    r"\b(?:better|fewer|less\s+often|faster|improved|closer)\b[^.!?\n]{0,40}?\bbut\b",
    r"\b(?:partly|partially)\s+(?:fixed|works?|working)\b|\bhalf\s+(?:working|works?|fixed)\b",
    r"\b\d+\s+(?:of|out\s+of)\s+(?:the\s+)?\d+\b.*\bpass",
    r"\bfewer\s+(?:errors?|failures?|warnings?)\b|\bdown\s+from\s+\d+\b",
    rf"\b{WORK}\s+(?:for|on|with|locally|in)\b.{{0,60}}\b(?:but\s+not|not|fails?|breaks?|still)\b",
    r"\bgood\s+start\b|\bpart\s+of\s+it\b|\bone\s+more\s+test\s+failing\b|\bone\s+test\s+left\b",
    r"^(?:getting\s+there|progress|quase|à\s+moitié)\b|\b(?:fails?|failing|flaky)\s+less\b|\bless\s+(?:often|flaky)\b|\bimproved\b.{0,40}\bbut\b",
    r"\bonly\s+\d+\s+(?:of|out\s+of)\s+(?:the\s+)?\d+\b",
    r"\b(?:passes|runs|compiles|builds|works?)\s+(?:on|in|locally|for|with)\b.{0,60}\b(?:but|fails?|still|not)\b",
)

# Not a reaction, whatever words it contains.
QUESTION_START = _rx(
    r"^(?:how|what|what's|why|where|when|which|who|does|do|is|are|can|could|will|would|should|did|has|have|any\s+idea)\b"
)
INSTRUCTION_START = _rx(
    r"^(?:please\s+|pls\s+|now\s+|also\s+|then\s+|and\s+)?(?:add|write|create|implement|rename|investigate|grep|generate|update|refactor|make|explain|show|move|convert|handle|commit|run|let'?s|lets|don'?t|do\s+not|change|remove|delete|use|set|install|check|look|open|read|find|search|replace|fix\s+the\s+(?:bug|issue|typo|test)|in\s+the\s+\w+,)\b"
)
REPORTED = _rx(
    r"\b(?:users?|customers?|people|someone|the\s+ticket|the\s+issue|they|qa)\s+(?:report|reported|say|says|said|complain|wrote|found)",
    r"\b(?:we|i)\s+(?:have|found|got)\s+a\s+bug\b|\bthere'?s\s+a\s+bug\b|\bthanks\s+in\s+advance\b|\bthanks\s+for\s+the\s+explanation\b",
)
NOT_TRIED = _rx(
    r"\b(?:i'?ll|i\s+will|will|going\s+to|gonna|let\s+me)\s+(?:try|test|check|run)\b",
    r"\bhaven'?t\s+(?:tried|tested|run)\b|\bnot\s+sure\s+yet\b|\bcan'?t\s+test\b|\brunning\s+it\s+now\b|\bone\s+sec\b",
)

NO_THANKS = _rx(r"^(?:no|nah|nope)[,.!]?\s*(?:thanks|thank\s+you|thx)\W*$")
# A bare "ok" / "cool" / "nice" that only acknowledges, then moves on to something else ("cool. can
# you also make it reject files over 25 MB", "ok, now do the same for orders", "cool, makes
# sense"): no verdict on the work, unless what follows gives one ("ok, now it works").
WEAK_ACK = _rx(
    r"^\W*(?:ok(?:ay)?|cool|nice|sure|alright|got\s+it|neat)\b(?:[\s,.!]+(?:cool|ok))?[\s,.!:;-]+(?P<rest>.+)$"
)
MOVES_ON = _rx(
    r"^(?:(?:can|could|would)\s+you\s+(?:also|now|next)\b|(?:now|next|also|then)\b|(?:please\s+)?(?:also\s+)?do\s+the\s+same\b|"
    r"makes\s+sense\b)"
)
STILL_FAILING = _rx(
    rf"\b{STILL}\b(?:\s+\w+){{0,3}}?\s+(?:{NEG}|fail\w*|broken|wrong|the\s+same|crash\w*|throw\w*|return\w*|complain\w*|\d{{3}}\w*)"
)
BLAME_QUESTION = _rx(r"\bwhy\s+did\s+you\s+(?:delete|remove|break|drop|revert)\b")

# What follows a "but" to the end of its sentence; a question there asks, it does not report.
_BUT_CLAUSE = re.compile(r"\bbut\b(?P<rest>[^.!?\n]*)(?P<end>[.!?\n]|$)")

_CODE_BLOCK = re.compile(r"```.*?(?:```|$)", re.DOTALL)
_INLINE = re.compile(r"`[^`\n]*`|\"[^\"\n]*\"|(?<![a-z])'[^'\n]*'(?![a-z])|“[^”\n]*”")
_CLAUSE = re.compile(r"[.!?;:\n—]|,\s|\s-\s")


def _test_summary(code: str) -> str:
    """What a pasted block says about tests: only runner summaries count, never its words."""
    out = []
    for line in code.splitlines():
        low = line.lower()
        if re.search(r"\b\d+\s+(?:passed|failed)\b|^failed\s|\berror\[|traceback|segmentation fault", low):
            out.append(low)
    return " ".join(out)


def _clean(text: str) -> str:
    blocks = _CODE_BLOCK.findall(text)
    prose = _CODE_BLOCK.sub(" ", text)
    # Markdown quotes are someone else's words (a customer, a ticket, an earlier message).
    prose = "\n".join(line for line in prose.splitlines() if not line.lstrip().startswith(">"))
    prose = _INLINE.sub(" ", prose.replace("’", "'").replace("‘", "'"))
    summary = " ".join(_test_summary(b) for b in blocks)
    return (prose.strip() + (" " + summary if summary else "")).lower().strip()


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    return m.group(0).strip() if m else None


def _split_sentence(text: str) -> tuple[str, str, str]:
    m = re.search(r"[?!.\n]+\s*", text)
    if not m:
        return text, "", ""
    return text[: m.start()], m.group(0), text[m.end() :]


def _opens(pattern: re.Pattern[str], clause: str) -> bool:
    """The cue starts within the first two words of the clause."""
    m = pattern.search(clause)
    return bool(m) and len(clause[: m.start()].split()) <= 2


def _but_trouble(text: str) -> str | None:
    """A "but" that reports trouble after a success ("429s gone 👍 but it restarts every ~20 min
    now", "lint green. but the msrv job now says 1.79"): the fix worked only in part. Not a
    "but" that asks ("works, but why?") or thanks."""
    for m in _BUT_CLAUSE.finditer(text):
        rest = m.group("rest").strip()
        if m.group("end") == "?" or not rest or QUESTION_START.match(rest) or POLITE.match(rest):
            continue
        if TROUBLE.search(rest):
            return m.group(0).strip()
    return None


def classify(text: str) -> Reaction:
    if not isinstance(text, str) or not text.strip():
        return Reaction(UNKNOWN)
    t = _clean(text)
    if not t:
        return Reaction(UNKNOWN)
    if NO_THANKS.search(t):
        return Reaction(UNKNOWN)
    if REPORTED.search(t):
        return Reaction(UNKNOWN)
    ack = WEAK_ACK.match(t)
    if ack and MOVES_ON.match(ack.group("rest").strip()) and classify(ack.group("rest")).label == UNKNOWN:
        return Reaction(UNKNOWN)
    first_clause = _CLAUSE.split(t, maxsplit=1)[0].strip()
    # A message that opens with a question or an instruction is about something else ("fix the
    # bug where search still fails", "what happens if it fails?"), unless it opens with a
    # reaction; a frustrated "why is it still failing?" is one, and so is what follows the
    # opening sentence ("what did you change? I see no difference").
    opens_with_reaction = any(
        _opens(p, first_clause) for p in (NEGATED_NEGATIVE, SUCCESS, POLITE, FAILURE, STRONG_FAILURE, PARTIAL_CUE)
    )
    if not opens_with_reaction and (QUESTION_START.search(first_clause) or INSTRUCTION_START.search(first_clause)):
        first_sentence, _, rest = _split_sentence(t)
        blame = _first(BLAME_QUESTION, first_sentence) or (
            _first(STILL_FAILING, first_sentence) if QUESTION_START.search(first_clause) else None
        )
        if blame:
            return Reaction(FAILED, blame)
        if not rest.strip():
            return Reaction(UNKNOWN)
        t = rest

    success = _first(NEGATED_NEGATIVE, t)
    rest = NEGATED_NEGATIVE.sub(" ", t)
    success = success or _first(SUCCESS, rest) or _state_now(rest)
    polite = _first(POLITE, rest)
    failure = _first(FAILURE, rest)
    strong = _first(STRONG_FAILURE, rest)
    partial = _first(PARTIAL_CUE, rest)

    if partial and not strong:
        return Reaction(PARTIAL, partial)
    if strong:
        return Reaction(FAILED, strong)
    if failure:
        return Reaction(PARTIAL, f"{success} / {failure}") if success else Reaction(FAILED, failure)
    if success or polite:
        if NOT_TRIED.search(rest) and not success:
            return Reaction(UNKNOWN)
        trouble = _but_trouble(rest[rest.find(success) :] if success and success in rest else rest) if success else None
        if trouble:
            return Reaction(PARTIAL, f"{success} / {trouble}")
        return Reaction(WORKED, success or polite)
    return Reaction(UNKNOWN)
