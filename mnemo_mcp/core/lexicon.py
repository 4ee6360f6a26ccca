"""Words for what a hostile note asks, in the languages developers write notes in.

Each constant is a regular-expression alternation for one idea, in English and in Russian,
Ukrainian, Chinese, Japanese, Korean, Spanish, Portuguese, Italian, French, German, Polish,
Turkish, Dutch, Arabic, Hebrew, Hindi, Vietnamese, Indonesian, Persian, Czech, Swedish, Greek and
Thai (the order below). They are matched against lowercased text with look-alike letters already
folded (core.disguise). `core.intent` puts them together: an idea alone is rarely enough, a note
is judged by what it combines (ask + user + secret, send + secret + destination, ...).
"""

from __future__ import annotations

import re

# The assistant, as a note's addressee ("for the assistant", "the assistant should").
ADDRESSED = (
    r"\b(?:to|for|dear|attention|hey|hi|note\s+(?:to|for)|notice\s+(?:to|for)|rule\s+for|instructions?\s+for|"
    r"fix\s+for|tip\s+for)\s+(?:the\s+|any\s+|all\s+|every\s+|our\s+)?(?:ai\s+|coding\s+)?(?:assistants?|agents?|ai|llms?|"
    r"copilots?|claude|bots?|automation|automated\s+\w+)\b"
    r"|\b(?:the|any|every|an?|each|whichever)\s+(?:ai\s+|coding\s+)?(?:assistants?|agents?|ai|llm|model|copilot|claude)"
    r"(?:\s+\w+ing\s+(?:\w+\s+){0,3}?)?\s+(?:should|must|shall|will|needs?\s+to|has\s+to|is\s+(?:expected|required|supposed)\s+to|"
    r"can\s+(?:do|just|run|apply)|adds|sets|runs|uses|disables|deletes|removes|approves|merges|pushes|sends|posts|reads|asks|includes|"
    r"copies|decodes|uploads|grants|edits|appends|treats|follows|keeps|stores|prints|closes|installs|forwards|attaches)\b"
    r"|@(?:assistant|agent|claude|copilot|ai)\b|\((?:assistant|agent|ai|for\s+the\s+assistant)\)|^\s*(?:assistant|agent|ai)\s*:"
    r"|\bwhoever\s+(?:automates|builds\s+this\s+with|runs\s+this\s+with|maintains\s+this\s+with)|\bautomated\s+(?:agents?|maintainers?|"
    r"tools?|assistants?|reviewers?)\b|\bassistants?\s+(?:working|reviewing|running|operating|preparing|reading|helping|debugging)\b"
    r"|\bif\s+you\s+are\s+an?\s+(?:ai|assistant|agent|llm|language\s+model)|\bassistant\s+reviewers?\b"
    r"|(?:для|к)\s+(?:ии-?)?ассистент|ассистенту|ассистент\w*\s+(?:долж|следует|нужно|обязан)|помощнику|для\s+помощника"
    r"|для\s+асистент|асистенту|помічнику"
    r"|给.{0,14}(?:助手|助理)|(?:助手|助理)\s*(?:：|:|，|请|应|必须|需要|要)|负责.{0,12}(?:助手|助理)|協助.{0,10}助理"
    r"|(?:アシスタント|エージェント)(?:へ|に|は|が|向け|の方)"
    r"|(?:어시스턴트|에이전트|도우미)(?:는|에게|께|가|를\s*위한|용)"
    r"|(?:para|al)\s+(?:el\s+)?asistente|asistente\s+(?:debe|deberá|tiene\s+que|que\s+trabaje)"
    r"|(?:para|ao)\s+(?:o\s+)?assistente|assistente\s+(?:deve|precisa|que\s+trabalh)"
    r"|(?:per|all')\s*(?:l')?assistente|l'assistente\s+(?:che|deve|dovrà)"
    r"|(?:pour|à)\s+l'assistant|l'assistant\s+(?:doit|devra|qui)|l'assistant\s+\w+rait"
    r"|(?:für\s+den|an\s+den|vom|dem)\s+(?:ki-)?assistenten|assistent\w*\s+(?:soll|muss|wird|darf)"
    r"|dla\s+asystent|asystent\w*\s+(?:powinien|musi|ma\s+|obsługując)"
    r"|asistan\s+için|asistan(?:a|ın)\b|asistan\s+(?:şunu|bunu|her)"
    r"|(?:voor|aan)\s+de\s+(?:ai-)?assistent|de\s+assistent\s+\w+"
    r"|(?:إلى|الى|ل)\s*(?:ال)?مساعد|للمساعد|المساعد\s+(?:يجب|عليه)"
    r"|לעוזר|לסוכן|העוזר\s+(?:צריך|חייב)"
    r"|सहायक\s+(?:के\s+लिए|को|से)"
    r"|(?:cho|gửi|dành\s+cho)\s+trợ\s+lý|trợ\s+lý\s+(?:nên|phải|cần|hãy)"
    r"|(?:untuk|kepada)\s+(?:asisten|otomatisasi|agen)|asisten\s+(?:harus|wajib|perlu)"
    r"|(?:برای|به)\s+دستیار|دستیار\s+باید"
    r"|pro\s+asistent|asistent\w*\s+(?:by\s+měl|musí|má\s)"
    r"|till\s+(?:den\s+)?(?:ai-)?assistent|assistent\w*\s+(?:ska|bör|måste)"
    r"|(?:για|προς)\s+τον\s+βοηθ|βοηθ\w*\s+(?:πρέπει|οφείλει)"
    r"|(?:ถึง|สำหรับ)ผู้ช่วย|ผู้ช่วย\s*(?:ai\s*)?(?:ต้อง|ควร)"
)

# An AI assistant named, however a note addresses it: the names and the word for "assistant" in
# the languages above and more (Romanian, Hungarian, Finnish, Baltic, Balkan, Caucasian, Indic,
# Turkic, Swahili, Tagalog, Welsh, Basque...). Weaker than ADDRESSED: a note that names it and
# links out of the project is judged with the link (core.injection).
ASSISTANT = (
    r"\b(?:ai|ia|ki|ии|llm|copilot|claude|gemini|codex)\b|assist|асист|ассист|asisten|asystent|asistan|avustaj|asszisztens|"
    r"segéd|助手|助理|アシスタント|어시스턴트|सहायक|সহকারী|உதவியாளர|సహాయకుడ|ಸಹಾಯಕ|सहाय्यक|مساعد|دستیار|عوزر|עוזר|βοηθ|"
    r"ผู้ช่วย|trợ\s*lý|помощник|помічник|msaidizi|katulong|pembantu|օգնական|ასისტენტ|туслах|ёрдамчи|көмекші|köməkçi|"
    r"aðstoð|cynorthwy|laguntzaile|жардамчы|ярдәмче|ёрдамчӣ|памочнік|adiut|ረዳት|ជំនួយការ|ຜູ້ຊ່ວຍ|လက်ထောက်|සහායක|സഹായി|ਸਹਾਇਕ|"
    r"સહાયક|مرستیال|alîkar|cúntóir|asistanto|kaiāwhina|fesoasoani|yanapaq|mataimaki|umsizi|caawi|olùrànlọ́wọ́|oluranlowo"
)

# A negation, in the languages above and the ones ASSISTANT adds (whole words; for Chinese,
# Japanese and Korean the characters and endings that negate or forbid).
NEGATION = (
    r"(?<!\w)(?:not|never|don'?t|no|не|ни|никогда|ніколи|никога|никад|нікада|nie|nigdy|ne|nikdy|nikoli|nikad|nikada|nemoj|"
    r"nicht|niemals|kein\w*|niet|nooit|geen|inte|aldrig|ikke|aldri|ej|ekki|aldrei|älä|ei|koskaan|älkää|ära|kunagi|soha|nem|nekad|niekada|"
    r"nu|niciodată|non|mai|nunca|não|nao|cap|pas|jamais|asla|hiçbir|heç|hech|μην|δεν|ποτέ|لا|لن|أبدا|אל|לא|هرگز|نه|نہ|مت|کبھی|मत|न|नहीं|कभी|नको|"
    r"না|কখনো|வேண்டாம்|ஒருபோதும்|వద్దు|ఎప్పుడూ|không|đừng|chớ|cấm|jangan|tidak|tak|bukan|huwag|hindi|kamwe|usi\w*|ห้าม|อย่า|ไม่|"
    r"არ|ნუ|არასოდეს|մի|երբեք|емес|ешқашан|бүү|битгий|peidiwch|byth|dim|ez|inoiz|mos|kurrë|ná|níor|ní|nunquam|numquam|noli|"
    r"moenie|kada|එපා|അരുത്|ഇല്ല|ਨਾ|ਨਹੀਂ|ના|નહીં|مه)(?!\w)"
    r"|不|别|勿|禁止|切勿|绝不|絶対|しない|しないで|ないで|마세요|않|금지|절대"
)

# The person the assistant works for.
USER = (
    r"\b(?:the\s+)?users?\b(?![._]\w)|\buser'?s\b|\bthe\s+(?:developer|human|person|new\s+hire|engineer|on-call\s+engineer|customer|requester)\b"
    r"|пользовател\w*|користувач\w*|用户|用戶|使用者|ユーザー|利用者|사용자|유저|usuari[oa]s?\b|utilisateur\w*|benutzer\w*|nutzer\w*|"
    r"anwender\w*|usuário\w*|utilizador\w*|utente\b|użytkownik\w*|kullanıcı\w*|gebruiker\w*|المستخدم|משתמש|המשתמש|उपयोगकर्ता|"
    r"người\s+dùng|pengguna|کاربر|uživatel\w*|användar\w*|χρήστ\w*|ผู้ใช้|felhasználó\w*|utilizator\w*|käyttäjä\w*|"
    r"bruger\w*|bruker\w*"
)

# Something secret: a password, a token, a key, a code, a credentials file, the environment.
SECRET = (
    r"\bpass(?:word|words|phrase|wd)\b|\bpasswort\b|\b(?:access|refresh|session|auth|api|bearer|npm|pypi|github|gitlab|personal\s+access|"
    r"registry|deploy|slack|bot)\s+tokens?\b|\btokens?\b(?!\s*(?:count|limit|budget|ization|izer|s?\s+per))|\bapi[\s_-]?keys?\b|"
    r"\bsecret(?:\s+access)?\s+keys?\b|\bclient[\s_]secrets?\b|\bcredentials?\b|\bcookies?\b|\bprivate\s+keys?\b|\bssh\s+keys?\b|"
    r"\bkeystore\b|\bprivate\s+(?:half|part)\b|\bid_(?:rsa|ed25519|ecdsa)\b(?!\.pub)|~/\.(?:ssh(?!/[\w.-]+\.pub\b)|aws|docker|gnupg|kube|netrc|npmrc|pypirc|git-credentials)|\.env(?:\.[\w.]+)?\b|"
    r"(?<![${])\benvironment(?:\s+variables?)?\b|\benv\s+vars?\b|\bos\.environ\b|process\.env\b|\bprintenv\b|\bkeyring\b|\b2fa\b|\botp\b|"
    r"\bone-time\s+codes?\b|\btwo-factor\s+codes?\b|\b(?:mfa|verification|6-digit|two-factor|2fa)\s+codes?\b|\brecovery\s+codes?\b|"
    r"\bmaster\s+password\b|\bauthorization\s+header\b|\bsecrets\b|\bsecrets\.\w+|\$\{?[a-z_]*(?:token|secret|password|passwd|api_?key)"
    r"\b|\b[a-z_]*(?:_token|_secret|_password|_passwd|_api_key|_key_b64)\b|\bsudo\s+password\b|\bsso\s+password\b|\bpins?\b"
    r"|парол\w*|токен\w*|(?<!\w)ключ\w*|секрет\w*|учётн\w+\s+данн\w+|учетн\w+\s+данн\w+|код\w*\s+2fa|код\w*\s+подтвержд\w*"
    r"|密码|密碼|口令|令牌|密钥|金鑰|秘钥|凭据|憑證|验证码|驗證碼|帳號與密碼|账号和密码"
    r"|パスワード|トークン|秘密鍵|認証情報|認証コード|シークレット"
    r"|비밀번호|암호|토큰|인증\s*코드|자격\s*증명|시크릿|키를"
    r"|contraseñas?|claves?\b|credenciales|código\s+(?:de\s+verificación|2fa|otp)|secretos?\b"
    r"|senhas?\b|credenciais|chaves?\b|código\s+de\s+(?:verificação|autenticação)|segredos?\b"
    r"|password\b|credenziali|chiav[ei]\b|codice\s+(?:otp|2fa|di\s+verifica)|segreti?\b"
    r"|mots?\s+de\s+passe|identifiants|clés?\b|jetons?\b|code\s+(?:de\s+vérification|2fa|otp)"
    r"|kennw[oö]rt\w*|zugangsdaten|schlüssel\w*|geheimnis\w*|bestätigungscode"
    r"|hasł\w+|dane\s+logowania|klucz\w*|kod\w*\s+(?:2fa|otp|weryfikac\w*)"
    r"|şifre\w*|parola\w*|anahtar\w*|kimlik\s+bilgi\w*|doğrulama\s+kod\w*"
    r"|wachtwoord\w*|inloggegevens|sleutel\w*|verificatiecode"
    r"|كلمة\s+(?:المرور|السر)|رمز\s+التحقق|مفتاح|بيانات\s+الاعتماد"
    r"|סיסמ\w+|טוקן|מפתח|קוד\s+אימות"
    r"|पासवर्ड|टोकन|कुंजी|सीक्रेट|ओटीपी"
    r"|mật\s+khẩu|mã\s+(?:xác\s+thực|otp|2fa)|khóa\s+(?:api|bí\s+mật)"
    r"|kata\s+sandi|kode\s+(?:otp|verifikasi|2fa)|kunci\s+api|api\s+key"
    r"|رمز\s+عبور|گذرواژه|توکن|کلید"
    r"|hesl\w+|přihlašovací\s+údaje|klíč\w*"
    r"|lösenord\w*|inloggningsuppgifter|nyckel\w*"
    r"|κωδικ\w+|συνθηματικ\w+|κλειδ\w+|διαπιστευτήρια"
    r"|รหัสผ่าน|รหัส\s*otp|โทเคน|คีย์"
)

# Ask somebody for something.
ASK = (
    r"\b(?:ask|asks|asking|request|requests|prompt|prompts|have|get|make)\s+(?:the\s+|your\s+|their\s+)?(?:\w+\s+){0,2}?"
    r"(?:users?|developers?|new\s+hires?|engineers?|customers?|persons?|them|him|her|people|teammates?)\s+"
    r"(?:(?:in|via|through)\s+(?:the\s+)?chat\s+)?(?:for|to\s+(?:paste|share|send|enter|give|provide|type|reply\s+with|tell|read\s+out|"
    r"post|upload|dm|forward))\b"
    r"|попрос\w*|спрос\w*|запрос\w*|потребу\w*|попроси|попросіть|запитай|要求|请.{0,6}提供|索取|向.{0,6}(?:用户|使用者).{0,4}(?:要|索)|"
    r"求め|聞いて|尋ね|入力させ|教えてもら|요청|물어|받아|입력하게|pid[ea]\w*|solicit[ae]\w*|pregunt[ae]\w*|peç[ae]\w*|pedir|"
    r"chied\w+|richied\w+|demande\w*|exige\w*|frag\w*|bitte\w*|verlang\w*|popro[sś]\w*|zapyta\w*|\biste\w*|\bsor\b|sorun|talep|vraag|"
    r"اطلب|اسأل|בקש|לבקש|שאל|माँग|मांग|पूछ|hỏi|yêu\s+cầu|minta|tanyakan|meminta|بخواه|درخواست|بپرس|požádej|požádat|vyžádej|"
    r"zeptej|be\s+om|fråga|ζήτ\w+|ρώτ\w+|ขอ"
)

# Send, post, upload, paste, attach, copy somewhere.
SEND = (
    r"\b(?:send|sends|sending|post(?!-)|posts|posting|upload|uploads|uploading|forward|forwards|e-?mail|mail|copy|copies|attach|attaches|"
    r"include|includes|paste|pastes|put|puts|share|shares|leak|exfiltrate|mirror|mirrors|sync|syncs|synced|back\s+up|store|stores|"
    r"save|saves|log(?!\s+(?:in|into|on|out)\b)|logs|push|pushes|commit|commits|submit|publish|dump|append|appends|appended|appending|write|writes|report|transmit|beacon)\b"
    r"(?![\"']?\s*[:=])"  # not a field: "email: admin@example.com", "file = ..."
    r"|отправ\w*|пересл\w*|перешл\w*|загруз\w*|выложи\w*|приложи\w*|вставь\w*|сохрани\w*|надішли\w*|відправ\w*"
    r"|发送|發送|上传|上傳|发到|附在|附上|贴到|貼到|提交|推送|保存到|存到|送信|送って|アップロード|貼り付け|添付|保存し"
    r"|보내|전송|업로드|첨부|붙여|저장|게시|\benv[ií](?!ron)\w*|\bsub[ea](?:lo|la|n)?\b|\badjunt\w*|\bpeg[au]\w*|\bpubli(?:c[aá](?!tion)\w*|qu\w*|e\w*|z\w*)|\bguard[ae]\w*|"
    r"envoi\w*|envoy\w*|téléverse\w*|colle\w*|joins?\b|sende\w*|schick\w*|lade\s+\w+\s+hoch|hochlad\w*|füge\w*|speicher\w*|"
    r"carreg\w*|col[ae]\b|anex\w*|salv[ae]\w*|invi[ao]\w*|caric\w*|incoll\w*|alleg\w*|salva\w*|wyślij|prześlij|wklej\w*|załącz\w*|"
    r"zapisz|gönder\w*|yükle\w*|yapıştır\w*|paylaş\w*|kaydet\w*|stuur\w*|verstuur\w*|upload\w*|plak\w*|deel\b|bewaar\w*|"
    r"أرسل|ارسل|ارفع|الصق|احفظ|לשלוח|שלח|להעלות|העלה|הדבק|לשמור|भेज\w*|अपलोड|पेस्ट|सहेज|gửi|tải\s+lên|dán|đính\s+kèm|lưu|"
    r"kirim\w*|unggah\w*|tempel\w*|lampirkan|simpan|بفرست|ارسال|آپلود|ذخیره|pošli|odešli|nahraj|vlož|ulož|skicka|ladda\s+upp|"
    r"klistra\s+in|spara|στείλ\w*|αποστολ\w*|ανέβασ\w*|επικόλλ\w*|αποθήκ\w*|ส่ง|อัปโหลด|แนบ|บันทึก"
)

# Where a sent secret would end up, other than a URL or an address (found separately).
SINK = (
    r"\bcommit(?:\s+message)?s?\b|\bcommitted\b|\b(?:pr|pull\s+request|issue|ticket|bug\s+report|report|comment|gist|paste(?:bin)?|"
    r"public\s+(?!keys?\b)\w+|wiki|draft|channel|#[\w-]+|chat|conversation|reply|answer|memory(?:\s+note)?|note|notes|memory_write|off-site|"
    r"external\s+\w+|shared\s+(?:doc|drive|drop|folder|\.env\S*))\b"
    r"|коммит\w*|чат\w*|заметк\w*|памят\w*|提交|コミット|커밋|메모리|commit|mémoire|speicher|pamięci|hafıza|geheugen|ذاكرة|זיכרון|"
    r"मेमोरी|bộ\s+nhớ|memori|حافظه|paměti|minnet|μνήμη|หน่วยความจำ|ghi\s+chú|nota|note|notiz|notatk|קומיט|cuộc\s+trò\s+chuyện|"
    r"対話|聊天|对话|對話|会话|チャット|채팅|대화"
)

# Keep it from the person: "don't tell the user", "without telling them", "nobody will notice".
CONCEAL = (
    r"\b(?:do\s+not|don'?t|never|must\s+not|mustn'?t|shouldn'?t|should\s+not|no\s+need\s+to|without)\s+(?:ever\s+)?"
    r"(?:tell|telling|inform|informing|notify|notifying|mention|mentioning|alert|alerting|warn|warning|let\s+\w+\s+know|letting\s+\w+\s+know|"
    r"bring\s+(?:it|this)\s+up|report|reporting|explain|explaining|disclos\w+|flag|flagging|call(?:ing)?\s+(?:it|this)\s+out|surface|surfacing)\b"
    r"(?:\s+(?:it|this|that|anything|about\s+(?:it|this|them|steps?\s+[\d\s–\-and]+)|(?:to\s+)?(?:the\s+user|users?|them|him|her|anyone|anybody|"
    r"the\s+team|reviewers|the\s+developer|the\s+human|the\s+owner)|in\s+the\s+(?:commit|pr|summary|reply|answer)\w*))+"
    r"|\b(?:do\s+not|don'?t|never)\s+(?:report|mention|show|surface|flag)\s+(?:the\s+|any\s+|these\s+|those\s+)?\w+(?:\s+\w+)?\s+to\s+"
    r"(?:the\s+user|the\s+human|the\s+developer|the\s+owner|reviewers)\b"
    r"|\b(?:nobody|no\s+one|no-one|the\s+user|they|users)\s+(?:will|would|won'?t|need\s+to|needs\s+to|has\s+to|is\s+going\s+to)\s+(?:ever\s+)?"
    r"(?:notice|know|see\s+it|find\s+out)|\bso\s+(?:that\s+)?(?:the\s+user|they|nobody|no\s+one|the\s+team)\s+(?:won'?t|doesn'?t|does\s+not|"
    r"will\s+not|never|can'?t|cannot)\s+(?:see|notice|know|find|spot)|\b(?:leave|keep)\s+(?:it|this|that|them|the\s+\w+)\s+out\s+of\s+"
    r"(?:the\s+)?(?:pr|commit|summary|description|changelog|report|reply|answer|diff)|\b(?:silently|quietly|secretly|covertly|discreetly|"
    r"stealthily)\s+(?:\w+\s+)?(?:add|append|run|install|change|edit|send|upload|remove|delete|disable|set|push|merge|copy|post|forward|"
    r"grant|modify|write|replace|rewrite|include|commit|apply)\b|\bdo\s+(?:it|this|that)\s+(?:quietly|silently|secretly|in\s+the\s+background)"
    r"|\bkeep\s+(?:this|it)\s+(?:between\s+us|secret|hidden|confidential|to\s+yourself)|\bhide\s+(?:it|this|that|them|the\s+\w+)\s+from\b"
    # "no need to open a PR or tell the user which file changed": the telling left out of a list
    r"|\b(?:no\s+need\s+to|don'?t|do\s+not|never|without)\s+(?:\w+\s+){1,5}?or\s+(?:tell|telling|inform|informing|notify|notifying|"
    r"mention|mentioning)\s+(?:the\s+user|users|them|anyone|the\s+team|reviewers)\b"
    r"|\bno\s+need\s+to\s+(?:point\s+(?:it|this|that|them)\s+out|flag\s+it|call\s+it\s+out)|\b(?:doesn'?t|does\s+not|don'?t|do\s+not|"
    r"won'?t|will\s+not|never)\s+(?:bring|brings)\s+(?:\w+\s+){0,3}up\s+(?:in|to|with)\b|\b(?:the\s+user|they|the\s+requester|"
    r"the\s+developer)\s+(?:doesn'?t|does\s+not|don'?t|do\s+not|won'?t)\s+(?:need|have)\s+to\s+(?:see|hear\s+about|be\s+told)"
    r"|\bnever\s+reveal\s+this|\bif\s+asked\s+about\s+(?:this|it)|\bsays?\s+no\s+such\s+note|\bwithout\s+(?:them|the\s+user|anyone)\s+knowing"
    r"|не\s+(?:сообщай|говори|рассказывай|упоминай|информируй|предупреждай|сообщать|говорить|упоминать|показывай)|без\s+(?:ведома|"
    r"уведомления)|пользователю\s+(?:\S+\s+){0,5}не\s+(?:сообщай|говори)|чтобы\s+пользователь\s+(?:\S+\s+)?не\s+(?:увидел|заметил|узнал)|"
    r"незаметно|втайне|тайно|не\s+(?:повідомляй|кажи|розповідай|згадуй)|без\s+відома|непомітно"
    r"|不要(?:向|跟|对|告诉|告訴|通知|提及|提到|让|讓|透露)|勿(?:告知|告诉|告訴|提及)|别(?:告诉|让.{0,4}知道)|不(?:告诉|告訴|通知|告知)"
    r"|悄悄|偷偷|暗中|瞒着|不动声色"
    r"|(?:言わ|伝え|知らせ|報告し|教え|触れ)(?:ない|ず)|黙って|こっそり|内緒|気づかれ"
    r"|(?:말하지|알리지|보고하지|언급하지|얘기하지)\s*(?:않|말|마)|몰래|조용히"
    r"|no\s+(?:se\s+lo\s+|le\s+)?(?:digas|cuentes|menciones|informes|avises|comuniques)|sin\s+(?:decírselo|decirle|avisar|informar|notificar|"
    r"mencionarlo|que\s+(?:el\s+usuario|nadie)\s+lo\s+sepa)|a\s+escondidas|en\s+secreto"
    r"|não\s+(?:conte|diga|mencione|informe|avise|comunique)|sem\s+(?:avisar|informar|contar|dizer|mencionar|notificar)|às\s+escondidas"
    r"|non\s+(?:dirlo|dire|menzionar\w*|informare|avvisare|comunicar\w*)|senza\s+(?:dirlo|dire|informare|avvisare|menzionar\w*|"
    r"comunicar\w*)|di\s+nascosto"
    r"|ne\s+(?:le\s+|lui\s+|leur\s+|les\s+)?(?:dis|dites|mentionne|mentionnez|signale|signalez|préviens|prévenez|informe|informez)\s+pas|"
    r"sans\s+(?:en\s+)?(?:informer|prévenir|avertir|le\s+dire|lui\s+dire|mentionner|signaler)|en\s+cachette|discrètement"
    r"|(?:nicht|niemals|keinesfalls)\s+(?:\w+\s+){0,2}(?:erwähnen|sagen|informieren|mitteilen|melden|benachrichtigen|verraten)|ohne\s+(?:es\s+|"
    r"den\s+(?:benutzer|nutzer)\s+|ihn\s+|jemanden\s+)?(?:darüber\s+)?(?:zu\s+)?(?:informieren|erwähnen|benachrichtigen|mitzuteilen|"
    r"sagen)|heimlich|unbemerkt"
    r"|nie\s+(?:mów|informuj|wspominaj|powiadamiaj|zgłaszaj)|bez\s+(?:informowania|wiedzy|powiadamiania|mówienia)|po\s+cichu|potajemnie"
    r"|(?:söyleme|bildirme|haber\s+verme|bahsetme|belirtme)(?:yin|yiniz|den)?\b|gizlice|sessizce"
    r"|(?:niet|nooit)\s+(?:\w+\s+){0,3}(?:melden|vertellen|zeggen|vermelden|informeren)\b|zonder\s+(?:dat\s+)?(?:\w+\s+){0,4}(?:te\s+)?"
    r"(?:melden|vertellen|informeren|laten\s+weten)|stilletjes|ongemerkt"
    r"|لا\s+تخبر|(?:دون|بدون)\s+(?:إخبار|علم|إبلاغ)|سرًا|خفية"
    r"|(?:אל|לא)\s+(?:תספר|תגיד|לספר|להגיד|תודיע|להודיע|לציין|תזכיר)|בלי\s+(?:לספר|להודיע|לציין)|בסתר|אין\s+צורך\s+(?:לציין|לספר|להודיע|להזכיר)"
    r"|मत\s+बता|न\s+बताएं|न\s+बताना|बिना\s+बताए|चुपके\s+से"
    r"|(?:đừng|không\s+được|chớ)\s+(?:nói|báo|cho\s+biết|thông\s+báo|đề\s+cập|kể)|mà\s+không\s+(?:báo|nói|thông\s+báo)|âm\s+thầm|lặng\s+lẽ"
    r"|jangan\s+(?:beri\s+tahu|beritahu|memberi\s+tahu|kasih\s+tahu|sebutkan|bilang|laporkan|informasikan)|tanpa\s+(?:memberi\s+tahu|"
    r"memberitahu|sepengetahuan)|diam-diam"
    r"|نگو|نگویید|اطلاع\s+نده|بدون\s+اطلاع|مخفیانه"
    r"|neříkej|neinformuj|nezmiňuj|neoznamuj|bez\s+(?:vědomí|informování|upozornění)|potají|tajně"
    r"|(?:berätta|säg|nämn|informera|meddela)\s+inte|inte\s+(?:berätta|säga|nämna|informera|meddela)|utan\s+att\s+(?:berätta|säga|"
    r"nämna|informera|meddela)|i\s+smyg"
    r"|(?:μην|μη)\s+(?:το\s+)?(?:πεις|πείτε|αναφέρεις|ενημερώσεις|ενημερώνεις)|χωρίς\s+να\s+(?:το\s+)?(?:πεις|ενημερώσεις|αναφέρεις)|κρυφά"
    r"|(?:ห้าม|อย่า|ไม่ต้อง)\s*(?:บอก|แจ้ง|เล่า)|โดยไม่(?:บอก|แจ้ง)|แอบ"
    # Left out of what the person reads: the summary, the PR, the reply.
    r"|\b(?:leave|keep)\s+(?:\w+\s+){0,4}?out\s+of\s+(?:the\s+|your\s+|any\s+)?(?:pr|commit|summary|summaries|description|changelog|"
    r"report|reply|answer|diff|review|release\s+notes)|\bleave\s+out\s+(?:anything|everything|any\s+mention|all\s+mention)\b|\b(?:omit|"
    r"exclude)\s+(?:\w+\s+){0,4}?(?:from|in)\s+(?:the\s+|your\s+)?(?:summary|summaries|report|reply|answer|pr\s+description|commit\s+"
    r"message|changelog)|\bwhen\s+summari[sz]ing\b[^.\n]{0,80}\b(?:leave\s+out|omit|skip|don'?t\s+mention)|\bso\s+(?:that\s+)?"
    r"(?:nobody|no\s+one|no-one)\s+(?:\w+\s+){0,2}(?:notices?|sees?|spots?)\b|\bnothing\s+to\s+report\s+back\b|"
    r"\bhandled\s+quietly\b|\b(?:doesn'?t|does\s+not|don'?t|do\s+not)\s+want\s+to\s+(?:hear|know|be\s+told)\s+about|\bnot\s+worth\s+"
    r"(?:mentioning|telling|bringing\s+up|flagging|reporting)|\b(?:don'?t|do\s+not|never)\s+bring\s+(?:this|it|that)\s+up|\bstop\s+"
    r"reporting\b[^.\n]{0,40}\bto\s+the\s+user|\bnot\s+(?:mention|tell|inform|report)\b[^.\n]{0,40}\b(?:to\s+)?the\s+user"
    r"|neuváděj|nezmiňuj|nikdo\s+nevšim\w*|aby\s+(?:si\s+)?(?:toho\s+)?(?:\S+\s+){0,3}nikdo\s+nevš|no\s+se\s+lo\s+(?:comentes|digas|"
    r"cuentes)|para\s+que\s+no\s+(?:aparezca\w*|se\s+vea\w*|lo\s+not\w+|se\s+not\w+)|不(?:用|要|必|需要)在(?:回复|回覆|回答|答复|总结|總結|摘要|"
    r"提交信息|提交说明|说明|說明)(?:里|裡|中)?.{0,4}(?:提到|提及|说明|說明|写|寫|提)|不用(?:提到|提及)|ne\s+(?:említsd|szólj|mondd\s+el)|anélkül,?\s+hogy\s+(?:szólnál|tudná|értesítenéd)|nu\s+(?:spune|"
    r"menționa)|älä\s+(?:kerro|mainitse)|(?:fortæl|fortell|nevn|nævn)\s+ikke|uden\s+at\s+(?:fortælle|sige)|uten\s+å\s+(?:si|fortelle)"
    r"|per\s+non\s+farlo\s+notare|senza\s+che\s+(?:l'utente|nessuno)\s+(?:lo\s+)?(?:sappia|noti)|sans\s+que\s+(?:l'utilisateur|"
    r"personne)\s+(?:ne\s+)?(?:le\s+)?(?:sache|remarque)|damit\s+(?:es\s+)?(?:der\s+(?:benutzer|nutzer)|niemand)\s+(?:es\s+)?nicht\s+"
    r"(?:merkt|sieht|bemerkt)|чтобы\s+никто\s+не|щоб\s+ніхто\s+не|(?:以免|免得).{0,8}(?:发现|注意|察觉)"
)

# Go ahead without the person's yes.
NO_CONFIRM = (
    r"\bwithout\s+(?:first\s+)?(?:a\s+|any\s+)?(?:asking|checking|confirming|consulting|pausing|stopping|confirmation|approval|permission|a\s+review|"
    r"review(?:ing)?|waiting|reading\s+the\s+diff|opening\s+the\s+diff|looking\s+at\s+(?:the\s+)?(?:diff|changes|code)|a\s+human)\b|\bno\s+(?:need|reason)\s+to\s+(?:ask|check|confirm|wait|consult|involve|"
    r"loop\s+in|bother)\b|\b(?:do\s+not|don'?t|never|no\s+need\s+to)\s+(?:stop|pause|wait)\s+(?:to|for)\b|\b(?:do\s+not|don'?t|doesn'?t|"
    r"does\s+not|no)\s+need\s+(?:to\s+wait\s+for\s+)?(?:a\s+|an\s+|the\s+|any\s+)?(?:human|person|user|reviewer|approval|review|"
    r"sign-?off)\b|\bon\s+(?:its|your)\s+own\b|\b(?:commit|push|merge|deploy)\w*\s+(?:it\s+|them\s+|this\s+)?(?:directly|straight)\s+"
    r"(?:to|into|on)\s+(?:main|master|prod\w*|release\w*)|\bgo\s+ahead\s+and\b[^.\n]{0,80}\banyway\b|\bjust\s+(?:do\s+it|keep\s+"
    r"(?:the\s+)?\w+\s+moving|edit\s+and\s+carry\s+on)\b|\b(?:don'?t|do\s+not|never|no\s+need\s+to)\s+(?:check|confirm|consult)\s+"
    r"with\b|\bprefers?\s+not\s+to\s+be\s+(?:interrupted|asked|bothered)|\bwithout\s+interrupt\w*|\b(?:asking|checking|stopping\s+to\s+"
    r"ask)\s+(?:only\s+|just\s+)?(?:slows|breaks|delays|wastes)|\bthey'?d\s+just\s+slow\s+it\s+down|\b(?:do\s+not|don'?t|never|no\s+longer)\s+(?:need\s+to\s+)?ask\b|\b(?:human\s+|user\s+)?confirmation\s+(?:is\s+)?"
    r"(?:not\s+(?:required|needed)|unnecessary)|\bno\s+confirmation\b|\bpre-?approved\b|\bno\s+questions\s+asked\b|\bautomatically\s+"
    r"approved\b|\bnobody\s+needs\s+to\s+(?:approve|review)|\bis\s+a\s+formality\b|\bthe\s+user\s+(?:does\s+not|doesn'?t)\s+need\s+to\s+"
    r"(?:be\s+asked|approve|know|see)"
    r"|\bno\s+(?:ticket|approval|review|sign-?off|change\s+request)\s+(?:is\s+)?(?:needed|required|necessary)\b"
    r"|\bassume\s+(?:that\s+)?(?:the\s+user|they|the\s+owner|the\s+requester)\s+(?:has|have)\s+(?:already\s+)?(?:confirmed|approved|"
    r"agreed|signed\s+off)|\b(?:nobody|no\s+one)\s+else\s+needs\s+to\s+(?:approve|review|sign\s+off|know)|\b(?:prompts?|confirmations?|"
    r"approvals?|reviews?|questions|dialogs?)\s+(?:that\s+)?(?:slow|slows)\s+(?:\w+\s+){0,2}down"
    r"|без\s+(?:подтвержден\w*|вопросов|спроса|согласования|запроса)|не\s+(?:спрашива\w*|уточня\w*)|без\s+підтвердження"
    r"|无需(?:确认|確認|询问|詢問|批准)|不(?:用|必|需要)(?:确认|確認|询问|詢問)|不要询问|確認(?:なし|せず)|(?:聞か|尋ね)ずに"
    r"|확인\s*없이|묻지\s*않고|승인\s*없이|sin\s+(?:preguntar|confirmación|confirmar|pedir\s+permiso|aprobación|revisión)"
    r"|sem\s+(?:perguntar|confirmação|confirmar|pedir|aprovação|revisão)|senza\s+(?:chiedere|conferma|confermare|approvazione)"
    r"|sans\s+(?:demander|confirmation|confirmer|approbation|validation)|ohne\s+(?:bestätigung|rückfrage|nachfrage|zu\s+fragen|"
    r"genehmigung|freigabe)|bez\s+(?:pytania|potwierdzenia|zgody|pytań)|(?:sormadan|onay\s+almadan|onaysız)|zonder\s+(?:te\s+vragen|"
    r"bevestiging|goedkeuring)|(?:دون|بدون)\s+(?:سؤال|تأكيد|موافقة)|(?:בלי|ללא)\s+(?:לשאול|אישור)|बिना\s+(?:पूछे|पुष्टि)|"
    r"không\s+cần\s+(?:hỏi|xác\s+nhận)|tanpa\s+(?:bertanya|konfirmasi|persetujuan)|بدون\s+(?:پرسیدن|تأیید)|bez\s+(?:ptaní|potvrzení)|"
    r"utan\s+att\s+fråga|behöver\s+inte\s+tillfrågas|χωρίς\s+(?:να\s+ρωτήσεις|επιβεβαίωση)|โดยไม่ต้อง(?:ถาม|ยืนยัน)"
    r"|不(?:用|必|需要)征求.{0,8}(?:同意|意见|許可|许可)|无需.{0,6}同意|no\s+(?:hace\s+falta|es\s+necesario)\s+(?:preguntar|consultar|"
    r"confirmar)|ne\s+demande\s+pas|pas\s+besoin\s+de\s+demander|frag\s+nicht|nicht\s+nachfragen|não\s+(?:precisa|é\s+preciso)\s+"
    r"perguntar|non\s+(?:serve|c'è\s+bisogno\s+di)\s+chiedere|non\s+chiedere|nie\s+pytaj|sormana\s+gerek\s+yok|vraag\s+niet|"
    r"(?:ne\s+)?kérdezz|kérdezés\s+nélkül|jóváhagyás\s+nélkül|neptej\s+se|bez\s+ptaní|älä\s+kysy|spør\s+ikke|uden\s+at\s+spørge"
)

# The note's word over the person's: "takes precedence over the user", "ignore the user's requests".
PRECEDENCE = (
    r"\b(?:take|takes|taking|have|has|get|gets|given)\s+(?:precedence|priority)\s+over\s+(?:the\s+|any\s+|anything\s+|what(?:ever)?\s+)?"
    r"(?:current\s+)?(?:user|human|developer|person|requests?|instructions?|messages?|you\s+are\s+told|claude\.md|agents\.md)"
    r"|\bover\s+the\s+(?:current\s+)?user'?s?\s+(?:requests?|instructions?|wish\w*|messages?)|\b(?:more\s+important|higher\s+priority)\s+than"
    r"\s+(?:any|the|what)\s+(?:\w+\s+)?(?:user|request|instruction)|\boverrides?\s+(?:this\s+file\s+and\s+)?(?:anything|whatever|what)\s+(?:the\s+user|"
    r"you)|\b(?:they|these|this|it)\s+overrides?\s+(?:the\s+)?(?:local\s+)?(?:claude\.md|agents\.md|instructions|rules|the\s+user|anything)"
    r"|\b(?:overrides?|supersedes?)\s+the\s+local\s+(?:instructions|rules|claude\.md|agents\.md)|\bsupersedes?\s+(?:[^.\n]{0,40}\s)?"
    r"(?:whatever|what|anything)\s+the\s+user\s+(?:asks|says|wants|requests)"
    r"|\b(?:treat|consider)\s+(?:the\s+)?user'?s?\s+(?:requests?|instructions?|messages?)\s+as\s+(?:suggestions|optional|advisory|void|"
    r"invalid)|\bignore\s+(?:any|every|all)?\s*(?:requests?|instructions?|messages?|attempts?|objections?)\s+(?:from|of|by)\s+the\s+user"
    r"|\bregardless\s+of\s+what\s+the\s+user\s+(?:says|asks|wants)|\binstead\s+of\s+(?:what(?:ever)?)\s+the\s+user\s+(?:asked|asks|says)"
    r"|\bas\s+coming\s+from\s+the\s+(?:repository\s+)?owner|\bfollow\s+them\s+over\b|\boutrank"
    r"|prioridad\s+sobre\s+.{0,40}usuario|más\s+importantes?\s+que\s+.{0,40}usuario|ignor\w*\s+.{0,30}(?:peticiones|instrucciones|solicitudes|"
    r"pedidos)\s+del\s+usuario"
    r"|prioridade\s+sobre\s+.{0,30}usuário|mais\s+importantes?\s+(?:do\s+)?que\s+.{0,30}usuário|ignor\w+\s+.{0,20}(?:pedidos|instruções)\s+do\s+usuário"
    r"|priorità\s+su\s+.{0,30}utente|più\s+important\w+\s+di\s+qualsiasi\s+richiesta|ignor\w*\s+.{0,20}richiest\w+\s+dell'utente|prevalgono\s+su"
    r"|priorité\s+sur\s+.{0,30}utilisateur|plus\s+importantes?\s+que\s+.{0,30}utilisateur|ignor\w+\s+.{0,20}(?:demandes|instructions)\s+de\s+"
    r"l'utilisateur|prévalen?t\s+sur"
    r"|vorrang\s+vor\s+.{0,30}(?:benutzer|nutzer|anwender)|wichtiger\s+als\s+.{0,30}(?:benutzer|nutzer)|(?:benutzer|nutzer)\w*\s+.{0,30}"
    r"übergeh|übergeht\s+.{0,30}(?:benutzer|nutzer)"
    r"|приоритет\w*\s+(?:над|перед)\s+.{0,30}пользовател|важнее\s+.{0,30}пользовател|пользовател\w*.{0,40}недействительн|"
    r"игнорир\w*\s+.{0,30}пользовател|пріоритет\w*\s+над\s+.{0,30}користувач|ігнору\w*\s+.{0,30}користувач"
    r"|优先于|優先於|(?:用户|使用者)的?(?:指令|要求|请求|請求|指示).{0,10}(?:无效|無效|作废|忽略)|忽略.{0,10}(?:用户|使用者)|比.{0,10}(?:用户|使用者).{0,10}更重要"
    r"|ユーザー.{0,10}(?:より優先|を無視|の指示を無視|の依頼を無視)|사용자.{0,15}(?:보다\s*우선|무시|무효)"
    r"|pierwszeństwo\s+.{0,30}użytkownik|ważniejsze\s+.{0,30}użytkownik|ignoruj\w*\s+.{0,30}użytkownik"
    r"|kullanıcı\w*\s+.{0,30}(?:göz\s+ardı|yok\s+say)|voorrang\s+(?:op|boven)\s+.{0,30}gebruiker|negeer\w*\s+.{0,30}gebruiker"
    r"|(?:تجاهل|أولوية\s+على).{0,30}المستخدم|(?:להתעלם|התעלם)\s+מ.{0,30}המשתמש|עדיפות\s+על.{0,20}המשתמש"
    r"|उपयोगकर्ता\s+.{0,30}(?:अनदेखा|नज़रअंदाज़|नजरअंदाज)|(?:bỏ\s+qua|phớt\s+lờ).{0,30}người\s+dùng|(?:abaikan|mengabaikan).{0,30}pengguna"
    r"|(?:نادیده\s+بگیر|اولویت\s+بر).{0,30}کاربر|(?:ignoruj|přednost\s+před).{0,30}uživatel|(?:ignorera|företräde\s+framför).{0,30}användar"
    r"|(?:αγνόησε|προτεραιότητα\s+έναντι).{0,30}χρήστ|(?:เพิกเฉย|ไม่ต้องสนใจ|สำคัญกว่า).{0,30}ผู้ใช้"
    r"|\bonly\s+(?:follow|obey)\s+(?:this|these|the)\s+(?:notes?|rules?)|\b(?:rules?|instructions?|settings?)\s+(?:of|from)\s+the\s+user\b"
    r"[^.\n]{0,30}\b(?:are|were|is|was)\s+(?:cancel+ed|void|revoked|suspended|lifted)|نه\s+از\s+کاربر|правила\s+користувача.{0,60}скасован"
    r"|правила\s+пользовател\w*.{0,60}отмен[её]н"
)

# Tell the person something false about the assistant or its work.
DECEIVE = (
    r"\b(?:say|says|answer|answers|respond|responds|reply|replies|tell\s+(?:the\s+user|them))\s+(?:that\s+)?(?:there\s+(?:is|are|was|were)\s+no\b|"
    r"no\s+such\b(?!\s+(?:file|directory|host|key|table|column|module|command|option|image|container|bucket))|it\s+(?:has|had)\s+(?:received|got|been\s+given)\s+no(?:ne)?\b|you\s+(?:have|had)\s+(?:received\s+)?no\b|everything\s+is\s+"
    r"(?:fine|ok|okay|correct|in\s+order|good)\b)|\b(?:say|claim|pretend)\s+(?:that\s+)?(?:it|this|the\s+note|the\s+rule|you)\s+"
    r"(?:doesn'?t|does\s+not|never)\s+exist|\b(?:leave|keep)\s+(?:it|them|that|this)\s+(?:\w+\s+){0,2}(?:and|but)\s+(?:tell|say|report|reply)\w*\s+(?:\w+\s+){0,3}(?:it|they|that)\s+(?:has|have|was|were|is|are)\s+(?:been\s+)?(?:done|disabled|removed|turned\s+off|deleted|fixed|reverted)\b|\b(?:approv|merg|sign\w*\s+off|lgtm|say|report|mark|accept)\w*\b[^.\n]{0,60}"
    r"\bwithout\s+(?:checking|verifying|looking\s+at|reading|reviewing|running)\s+(?:anything|the\s+(?:diff|code|changes?|tests?)|it|them)\b|\bsay\s+it\s+looks\s+good\b"
    r"|respond\w*\s+que\s+todo\s+(?:está|esta)\s+(?:correcto|bien)|sin\s+(?:comprobar|revisar|verificar)\s+nada|"
    r"rispondere\s+che\s+non|rispondi\s+che\s+(?:non|tutto)|senza\s+(?:controllare|verificare)\s+nulla|responda\s+que\s+(?:tudo|não)|"
    r"sem\s+(?:verificar|checar)\s+nada|répond\w*\s+que\s+(?:tout|rien|aucun)|sans\s+(?:rien\s+)?vérifier|antworte\w*,?\s+dass\s+"
    r"(?:alles|es\s+keine|nichts)|ohne\s+(?:etwas\s+)?zu\s+prüfen|(?:отвечай|ответь|скажи|говори)\w*,?\s+что\s+(?:всё|все|ничего|нет|"
    r"никаких)|не\s+проверяя|谎称|假装|(?:回答|回复|回覆).{0,8}(?:一切正常|没有|沒有)|存在しないと|(?:없다고|정상이라고)\s*(?:답|말)"
    r"|\b(?:tell|telling|assure|reassure|report\s+to|inform)\s+(?:the\s+user|users|the\s+person|them|the\s+team|reviewers?|everyone|"
    r"the\s+developer)\s+(?:that\s+)?[^.\n]{0,60}?\b(?:passed|passes|clean|cleanly|succeeded|is\s+green|was\s+green|went\s+fine|"
    r"nothing\s+(?:changed|was\s+found)|no\s+(?:issues|problems|findings|vulnerabilities|changes|errors))\b|\bif\s+(?:they\s+|the\s+"
    r"user\s+|anyone\s+|someone\s+)?(?:asks?|asked)\s+(?:directly\s+|about\s+it\s+)?,?\s*(?:say|answer|reply|tell\s+them)\s+(?:that\s+)?"
    r"(?:nothing|no\b|there\s+(?:is|was)\s+no|it\s+(?:was|is)\s+not|you\s+didn'?t)"
)

# "Tell them that ..." and "it passed / it is clean / no problems", in other languages: together
# (with the person named) a false report the note dictates.
SAY_THAT = (
    r"mondd\s+(?:\S+\s+){0,2}hogy|řekni\s+(?:\S+\s+){0,2}že|powiedz\s+(?:\S+\s+){0,2}że|dile\s+(?:\S+\s+){0,3}que|"
    r"di(?:gale|ga)\s+(?:\S+\s+){0,3}que|diga\s+(?:\S+\s+){0,3}que|d[ií]\s+(?:\S+\s+){0,3}che|dis\s+(?:\S+\s+){0,3}que|"
    r"dites\s+(?:\S+\s+){0,3}que|sag\w*\s+(?:\S+\s+){0,3}dass|zeg\s+(?:\S+\s+){0,3}dat|säg\s+(?:\S+\s+){0,3}att|"
    r"(?:скажи|сообщи|напиши)\w*\s+(?:\S+\s+){0,2}что|(?:скажи|повідом)\w*\s+(?:\S+\s+){0,2}що|告诉.{0,10}(?:说|是)|告訴.{0,10}(?:說|是)|"
    r"(?:と|って)(?:伝え|言っ|報告)|(?:라고|다고)\s*(?:말|전|보고)|söyle|spune\s+(?:\S+\s+){0,2}că|sano\s+(?:\S+\s+){0,2}että|"
    r"sig\s+(?:\S+\s+){0,2}at|si\s+(?:\S+\s+){0,2}at|katakan|bilang|nói\s+(?:\S+\s+){0,3}rằng|قل\s+|תגיד|बताओ\s+कि|بگو\s+که|"
    r"πες\s+(?:\S+\s+){0,2}ότι|บอก.{0,10}ว่า"
)
ALL_CLEAR = (
    r"tiszta|rendben|nincs\s+(?:hiba|probléma)|čist\w*|v\s+pořádku|czyst\w*|w\s+porządku|limpi[oa]|sin\s+problemas|todo\s+(?:bien|correcto)|"
    r"limpo|sem\s+problemas|tudo\s+certo|pulit[oa]|senza\s+problemi|tutto\s+(?:ok|a\s+posto)|propre|sans\s+problème|tout\s+va\s+bien|"
    r"sauber|keine\s+(?:probleme|fehler|befunde)|alles\s+in\s+ordnung|schoon|geen\s+problemen|in\s+orde|ren\b|inga\s+problem|"
    r"чист\w*|без\s+(?:проблем|ошибок|замечаний)|всё\s+в\s+порядке|все\s+в\s+порядке|успешн\w*|пройден\w*|без\s+помилок|"
    r"干净|没有问题|沒有問題|一切正常|通过|通過|問題(?:なし|ありません)|正常|문제\s*없|통과|temiz|sorun\s+yok|curat|fără\s+probleme|"
    r"puhdas|ei\s+ongelmia|bersih|tidak\s+ada\s+masalah|sạch|không\s+có\s+(?:lỗi|vấn\s+đề)|نظيف|לא\s+נמצאו|साफ|تمیز|καθαρ\w*|"
    r"χωρίς\s+προβλήματα|ผ่าน|ไม่มีปัญหา|passed|clean|\bok\b"
)

# The assistant's own instructions.
SYSTEM_PROMPT = (
    r"\bsystem\s*prompts?\b|\bsystem\s+message\b|\byour\s+(?:full\s+|hidden\s+|initial\s+|original\s+|current\s+)?(?:instructions|prompt|"
    r"system\s+instructions)\b|\bthe\s+text\s+of\s+your\s+instructions|\btools\s+you\s+(?:can\s+call|have|can\s+use|are\s+given)"
    r"|системн\w+\s+(?:промпт|подсказк|инструкци|сообщени)\w*|системн\w+\s+промпт|系统提示(?:词)?|系統提示(?:詞)?|系统指令|システムプロンプト|"
    r"시스템\s*프롬프트|prompt\s+(?:del|de|di)\s+sistema|prompt\s+(?:du\s+)?système|system-?prompt\w*|prompt\s+systemow\w*|sistem\s+"
    r"(?:istemi|komut\w*|promptu)|systeemprompt|(?:موجه|تعليمات)\s+النظام|(?:הנחיות|פרומפט)\s+המערכת|सिस्टम\s+प्रॉम्प्ट|"
    r"(?:lời\s+nhắc|prompt)\s+hệ\s+thống|prompt\s+sistem|پرامپت\s+سیستم|systémov\w+\s+prompt|systemprompt\w*|προτροπή\s+συστήματος|"
    r"พรอมต์ระบบ|คำสั่งระบบ"
)
REVEAL = (
    r"\b(?:print|prints|output|outputs|reveal|reveals|show|shows|dump|dumps|display|paste|post|write|include|copy|repeat|recite|share|"
    r"commit|export|send|echo|type\s+out|quote|leak)\b|выв(?:е|о)д\w*|покаж\w*|распечата\w*|打印|输出|輸出|显示|顯示|贴出|出力|表示|"
    r"貼り|출력|보여|공개|imprim\w*|muestr\w*|mostr\w*|publi\w*|escrib\w*|affich\w*|écri\w*|zeig\w*|gib\s+\w+\s+aus|ausgeb\w*|druck\w*|"
    r"stamp\w*|scriv\w*|wypisz|pokaż|wydrukuj|yazdır\w*|göster\w*|toon\b|اطبع|اعرض|הדפס|הצג|प्रिंट|दिखा|in\s+ra|hiển\s+thị|"
    r"tampilkan|cetak|چاپ|نمایش|vypiš|ukaž|skriv\s+ut|visa\b|εμφάνισ\w*|τύπωσ\w*|พิมพ์|แสดง"
    r"|incoll\w*|peg[au]\w*|col[ae]\b|colle[zr]?\b|einfüg\w*|füge\s+\w+\s+ein|wklej\w*|yapıştır\w*|plak\w*|вставь\w*|встав\w*|"
    r"粘贴|貼上|写入|寫入|原样|原樣|貼り付け|書き出|붙여\s*넣|기록|dán|tempel\w*|vlož\w*|klistra\w*|másold|írd\s+ki|kopír\w*"
)

# Do what a fetched page, issue or comment says.
FOLLOW = (
    r"\b(?:follow|obey|apply|execute|carry\s+out|implement|act\s+on|comply\s+with)\s+(?:all\s+|any\s+|the\s+|its\s+|every\s+|each\s+)?"
    r"(?:instructions?|directions|directives|rules|guidelines|commands|steps?)\s+(?:there|in\s+it|inside|on\s+(?:that|the)\s+page|"
    r"(?:it|the\s+page|they)\s+(?:contains|gives|lists)|you\s+find)|\bdo\s+(?:whatever|what)\s+(?:the\s+)?(?:latest\s+|last\s+|newest\s+)?(?:comment|page|issue|gist|it|they|that|file|"
    r"message|document)\s+(?:there\s+)?(?:asks|says|tells|requests|lists)|\b(?:follow|obey)\s+(?:what|whatever)\s+(?:it|they)\s+(?:says?|asks?)"
    r"|\band\s+follow\s+(?:it|them|the\s+instructions?|its\s+instructions?)\b|\bdo\s+(?:whatever|what)\s+(?:the\s+|it\s+|its\s+)?"
    r"(?:\w+\s+){0,2}(?:says|tells\s+you|asks(?:\s+for)?|returns|instructs|lists|suggests)\b"
    r"|следуй\w*\s+(?:\S+\s+)?(?:инструкци|указани)|выполни\w*\s+(?:\S+\s+)?(?:инструкци|указани)|按照.{0,10}(?:指示|指令|说明)|遵循.{0,8}(?:指示|指令)|"
    r"照做|指示に従|に従って|지시(?:를|대로)\s*따|sigue\s+las\s+instrucciones|siga\s+(?:as|las)\s+instru|suivez?\s+les\s+instructions|"
    r"befolge|folge\s+den\s+anweisungen|segui\s+le\s+istruzioni|postępuj\s+zgodnie|wykonaj\s+instrukcje|talimatlar\w*\s+(?:uygula|takip)|"
    r"volg\s+de\s+instructies|اتبع\s+التعليمات|בצע\s+את\s+ההוראות|निर्देशों\s+का\s+पालन|làm\s+theo\s+(?:hướng\s+dẫn|chỉ\s+dẫn)|"
    r"ikuti\s+instruksi|دستورالعمل\S*\s+را\s+(?:دنبال|اجرا)|postupuj\s+podle|följ\s+instruktionerna|ακολούθησε\s+τις\s+οδηγίες|ทำตามคำสั่ง"
)
# Fetched text used as the assistant's rules, from the start of every task.
REMOTE_RULES = (
    r"\b(?:rules|guidelines|instructions|policies|conventions)\b.{0,60}\b(?:maintained|hosted|published|kept|live)\s+at\s+https?://"
    r"|\b(?:load|fetch|read|pull|download|import)\s+(?:them|these|the\s+(?:rules|guidelines|instructions))\s+at\s+the\s+start\s+of\s+(?:every|each)"
    r"|\b(?:at|from)\s+the\s+(?:start|beginning)\s+of\s+(?:every|each)\s+(?:task|session|conversation)\b.{0,80}https?://"
    r"|https?://\S+.{0,80}\b(?:at|from)\s+the\s+(?:start|beginning)\s+of\s+(?:every|each)\s+(?:task|session|conversation)"
    r"|\btreat\s+(?:its|the|their|that\s+page'?s?)\s+(?:contents?|text|output|response|body)\s+as\s+(?:your\s+|the\s+)?(?:\w+\s+)?"
    r"(?:instructions|rules|directives|orders|system\s+prompt|guidelines)"
)

# Said as a rule that has been agreed: the usual cover for an unsafe step.
POLICY = (
    r"\bas\s+policy\b|\b(?:that'?s|this\s+is|it'?s)\s+(?:the\s+)?(?:policy|process|rule)\s+now\b|\bpolicy\s+now\b|\bteam\s+decision\b|"
    r"\b(?:was|has\s+been)\s+(?:decided|agreed|approved)\b|\bdecided\s+in\b|\b(?:admins?|the\s+team|leads?)\s+agreed\b|\bis\s+expected\b|"
    r"\bper\s+the\s+(?:\w+\s+)?policy\b|\bexempt\s+from\b|\bthe\s+security\s+team\s+knows\b|\bthe\s+whole\s+team\s+uses\b|"
    r"\bon\s+(?:the\s+user'?s|their|his|her)\s+behalf\b|\bon\s+behalf\s+of\s+the\s+user\b|\b(?:every|each|any)\s+(?:session|task|"
    r"clone|time|run|pr|pull\s+request|commit|machine)\b|\bon\s+first\s+run\b|\bwhen\s+you\s+open\s+the\s+repo\b|\bsession\s+start\b|"
    r"\bsetup\s+step\s+0\b|\bbefore\s+anything\s+else\b|\bjust\s+a\s+mirror\b|\bit'?s\s+(?:just|only)\s+(?:a|for)\b|"
    r"\b(?:team|house)\s+(?:convention|rule|policy)\b|\bnext\s+time\s+you\b|\b(?:handled|done|run)\s+by\s+the\s+(?:assistant|agent)\b"
    r"|so\s+wurde\s+es|im\s+team\s+beschlossen|er\s+is\s+besloten|il\s+a\s+été\s+convenu|se\s+decidió|è\s+stato\s+deciso|foi\s+decidido"
    r"|было\s+решено|团队决定|チームで決定|팀에서\s*결정"
    # An unsafe step sold as a shortcut: "saves reruns", "simpler than debugging roles", "this is standard".
    r"|\b(?:to\s+save\s+(?:time|a\s+round\s+trip)|saves?\s+(?:time|reruns?|a\s+lot\s+of\s+time|everyone\s+time)|(?:it'?s\s+)?"
    r"(?:simpler|quicker|faster|easier)\s+than\b|less\s+hassle|(?:this\s+is|it'?s)\s+(?:standard|routine|normal|harmless|"
    r"totally\s+fine|safe)\b|standard\s+(?:practice|procedure)\b|(?:everyone|the\s+whole\s+team)\s+does\s+(?:this|it)\b|"
    r"nothing\s+to\s+worry\s+about)"
)

# Words that undo a sentence: "never", "don't", in the languages above (Japanese and Korean put
# theirs after the verb: NEGATED_AFTER).
NEGATED_BEFORE = re.compile(
    r"(?:\b(?:never|not|don'?t|do\s+not|doesn'?t|does\s+not|must\s+not|mustn'?t|shouldn'?t|should\s+not|cannot|can'?t|avoid|no\s+one|"
    r"nobody|no|nor|refuse|forbid\w*|prohibit\w*|instead\s+of)\b|никогда|нельзя|\bне\b|ніколи|\bні\b|不要|别|勿|禁止|不得|不能|严禁|切勿|不可|絶対に|"
    r"\bnunca\b|\bno\b|jamás|jamais|\bpas\b|\bniemals\b|\bnicht\b|\bkein\w*|\bnão\b|\bmai\b|\bnon\b|\bnigdy\b|\bnie\b|\basla\b|\bnooit\b|"
    r"\bniet\b|\bgeen\b|\bلا\b|\bأبدا|אסור|\bלא\b|\bאל\b|कभी\s+नहीं|\bमत\b|\bन\b|\bkhông\b|\bđừng\b|\bcấm\b|\bjangan\b|\btidak\b|"
    r"\bهرگز\b|\bnikdy\b|\bne\b|\baldrig\b|\binte\b|\bποτέ\b|\bμην\b|\bδεν\b|ห้าม|อย่า|ไม่)[^.;:!?\n,。！？，]{0,40}$",
    re.I,
)
NEGATED_AFTER = re.compile(
    r"^[^.;!?\n。！？]{0,12}(?:ない|ません|禁止|ず[にと]|지\s*마|않|금지|말\s*것|마세요|mayın|meyin|ma\b|me\b)"
)

ADDRESSED_RE = re.compile(ADDRESSED, re.I | re.M)
ASSISTANT_RE = re.compile(ASSISTANT, re.I)
NEGATION_RE = re.compile(NEGATION, re.I)
USER_RE = re.compile(USER, re.I)
SECRET_RE = re.compile(SECRET, re.I)
ASK_RE = re.compile(ASK, re.I)
SEND_RE = re.compile(SEND, re.I)
SINK_RE = re.compile(SINK, re.I)
CONCEAL_RE = re.compile(CONCEAL, re.I)
NO_CONFIRM_RE = re.compile(NO_CONFIRM, re.I)
PRECEDENCE_RE = re.compile(PRECEDENCE, re.I)
DECEIVE_RE = re.compile(DECEIVE, re.I)
SAY_THAT_RE = re.compile(SAY_THAT, re.I)
ALL_CLEAR_RE = re.compile(ALL_CLEAR, re.I)
SYSTEM_PROMPT_RE = re.compile(SYSTEM_PROMPT, re.I)
REVEAL_RE = re.compile(REVEAL, re.I)
FOLLOW_RE = re.compile(FOLLOW, re.I)
REMOTE_RULES_RE = re.compile(REMOTE_RULES, re.I)
POLICY_RE = re.compile(POLICY, re.I)
