"""The words the text is drawn from: English word lists by part of speech (inflected by rule), number tokens,
emoji, and smaller word lists for eight other languages with their punctuation.

Function words are ranked in rough frequency order; content words get the following ranks in a fixed shuffled
order (:mod:`synthetic.tables` weights them by Zipf's law)."""

from __future__ import annotations

FUNCTION_WORDS = """
the of and to a in is that for it as with was on be by this are or from at which an not have can but we you
they their has more one will all also been its if these his when there other such were so had some how may
than into would only most each what about new used them our any between through first two many do both could
over those where should while because well then her she he who make made even like just after same three
since under much very without during before within several often however your my I it's don't can't there's
let's here up out no yes I'm you're we're they're doesn't isn't aren't won't that's I've you'll us me him
them both either neither whether although though unless until upon via per among across toward towards
against along around behind beyond near above below off onto down again once further more less few own
"""

NOUNS = """
ability access account accuracy action activity actor adult advantage advice agency agent agreement air
airport algorithm amount analysis animal answer apartment application approach area argument arm army art
article artist aspect assessment assignment assistant assumption atmosphere attack attempt attention attitude
audience author authority average award baby background balance ball band bank bar base basis basket battery
battle beach bean bear bed bedroom beer behavior belief benefit bike bill bird birth bit blood board boat body
bone book border boss bottle bottom box boy brain branch brand bread break breakfast bridge brother budget
building bus business butter button cabinet cable cake calendar camera camp campaign cancer candidate capital
car card career carpet case cash castle cat category cause cell center century chain chair challenge champion
chance change channel chapter character charge chart check cheese chemistry chicken child childhood choice
church circle citizen city claim class classroom client climate clock cloud club coach coast code coffee
collection college color column combination comment commission committee communication community company
comparison competition complaint component computer concept concern concert conclusion condition conference
confidence conflict connection consequence construction consumer contact content context contract
contribution control conversation cookie copy corner cost counter country county couple courage course court
cousin cover cow crack craft credit crew crime crisis criteria crowd culture cup currency curve customer cycle
dad damage dance danger database date daughter day deal death debate debt decade decision definition degree
delivery demand department deposit depth description design desk detail development device diagram difference
difficulty dimension dinner direction director dirt disaster discipline discount discussion disease dish
distance distribution district doctor document dog door draft drama drawing dream dress drink driver drop drug
duty earth economy edge editor education effect efficiency effort egg election element emergency emotion
emphasis employee employer energy engine engineer engineering entry environment episode equation equipment
error estate evaluation event evidence exam examination example exchange exercise existence expansion
experience expert explanation expression extent face fact factor factory failure faith family fan farm farmer
fashion father fault fear feature feedback feeling field figure file film finance finding finger fire firm
fish flight floor flow flower focus food foot force forest form format formula foundation frame framework
freedom friend friendship fruit fuel function fund future gain game gap garage garden gas gate gene generation
gift girl glass goal gold government grade grain grammar graph grass ground group growth guest guidance guide
guitar habit hair half hall hand handle harm hat head health heart heat height help highway history hold hole
holiday home homework hope horse hospital host hotel hour house housing human hunger husband idea identity
image impact importance impression improvement incident income increase independence index individual industry
inflation influence information initiative injury input insect inside insight instance instruction instrument
insurance intention interaction interest internet interview introduction investment invitation island issue
item jacket job joint joke journal journey judge judgment juice key kid kind king kitchen knee knife knowledge
lab label labor lack lady lake land landscape language laptop law lawyer layer leader leadership league lecture
leg lesson letter level library life light limit line link list literature loan location lock logic loss love
machine magazine maintenance majority management manager manner map margin market marketing marriage master
match material math matter meal meaning measure measurement meat media medicine meeting member membership
memory message metal method middle midnight mind minute mirror mission mistake mixture mode model moment money
month mood morning mother motion motor mountain mouse mouth movement movie muscle museum music nation nature
neck need negotiation neighbor network news newspaper night noise note notice novel number nurse object
objective obligation occasion ocean offer office officer oil operation opinion opportunity option orange order
organization outcome output owner package page pain paint painting pair panel paper parent park part
participant partner party passage passenger password past path patient pattern payment peace penalty pension
people percentage performance period permission person perspective phase phone photo phrase physics piano
picture piece pilot pipe place plan plane planet plant plastic plate platform player pleasure plenty poem poet
poetry point police policy politics pollution pool population position possibility post potato potential
pound power practice preference preparation presence presentation president pressure price pride principle
printer priority prison privacy prize probability problem procedure process product production profession
professor profile profit program progress project promise proof property proportion proposal protection
protein protest psychology public purpose quality quantity quarter queen question rain range rate ratio
reaction reader reading reality reason receipt recipe recognition recommendation record recording reflection
region relation relationship release religion replacement report representative reputation request
requirement research reserve resident resolution resource response responsibility rest restaurant result
return revenue review revolution reward rhythm rice river road rock role roof room root rule safety salad
salary sale salt sample sand satisfaction scale scene schedule scheme school science score screen script sea
season seat second secret secretary section sector security selection sense sentence sequence series server
service session setting shape share shelter shift ship shirt shock shoe shop shopping shoulder side sign signal
signature significance silver singer sister site situation size skill skin sky sleep slice smile smoke snow
society software soil soldier solution son song sound soup source space speaker speech speed spirit sport spot
spring square staff stage standard star start state statement station status step stock stomach stone storage
store storm story strategy stream street strength stress structure student studio study style subject
substance success sugar suggestion summary summer sun supermarket supply support surface surgery surprise
survey suspect symbol sympathy system table tale talent target task taste tax tea teacher teaching team
technique technology teen telephone television temperature tension term territory test text theme theory
thing thought threat ticket time title tone tool tooth topic total touch tour tourist towel tower town track
trade tradition traffic train training transition transport travel treatment tree trend trial trip trouble
truck trust truth tune turn type uncle understanding union unit universe university user vacation value
variable variation variety vegetable vehicle version video view village violence virus vision visit visitor
voice volume vote wall war warning waste watch water wave wealth weapon weather website wedding week weekend
weight welcome wife will wind window wing winner winter wisdom woman wood word worker world writer writing yard
year youth zone
"""

# Regular verbs, inflected by rule (-s, -ed, -ing); the doubling ones are listed in DOUBLED_VERBS.
VERBS = """
accept achieve add adjust admire admit adopt advise affect agree allow analyze announce answer appear apply
appreciate approach approve argue arrange arrive ask assess assign assist assume attach attack attempt attend
attract avoid balance base believe belong benefit borrow bother calculate call care carry cause celebrate
change charge check clean clear climb close collect combine compare compete complain complete compute concern
conclude confirm connect consider consist contain continue contribute control convert convince cook copy
correct count cover create cross damage dance decide declare decline decrease define deliver demand depend
describe deserve design destroy detect determine develop die disappear discover discuss display divide document
doubt download dress earn edit educate encourage end enjoy ensure enter establish estimate evaluate examine
exist expand expect experience explain explore express extend fail fill finish fix focus follow force form
generate handle happen hate help hire hope identify ignore imagine implement improve include increase indicate
influence inform install intend introduce invest invite involve join jump kick laugh launch learn like limit
link list listen live load locate look love maintain manage mark match measure mention miss mix modify move
need notice observe obtain occur offer open order organize own paint pass perform pick place plan play please
point predict prefer prepare present prevent print process produce promise protect prove provide publish pull
push question raise reach receive recognize recommend record reduce refer reflect refuse regard relate release
remain remember remove repeat replace reply report represent request require reserve resolve respond rest
return reveal review save score search select serve share shift shop sign solve sort start stay step stop
store study submit succeed suffer suggest supply support suppose surround survive talk test thank touch train
transfer travel treat trust try turn type update use validate visit vote wait walk want warn wash watch wish
wonder work worry
"""
DOUBLED_VERBS = frozenset("admit control occur plan prefer refer shop step stop submit".split())

IRREGULAR_VERBS = """
am was were been being have has had having do does did done doing go goes went gone going get gets got gotten
getting make makes making take takes took taken taking see sees saw seen seeing come comes came coming know
knows knew known knowing think thinks thought thinking give gives gave given giving find finds found finding
tell tells told telling become became becoming leave left leaving feel felt feeling bring brought bringing
begin began begun beginning keep kept keeping hold held holding write wrote written writing stand stood
standing hear heard hearing let lets letting mean meant meaning set sets setting meet met meeting run ran
running pay paid paying sit sat sitting speak spoke spoken speaking lead led leading grow grew grown growing
lose lost losing fall fell fallen falling send sent sending build built understand understood draw drew drawn
broke broken spend spent cut cuts rise rose risen drive drove driven buy bought wear wore worn choose chose
chosen seek sought throw threw thrown catch caught win won forget forgot forgotten sell sold teach taught fly
flew eat ate eaten slept read reads say says said saying put puts show showed shown
"""

ADJECTIVES = """
able academic active actual additional administrative afraid aggressive alive alternative amazing ancient
angry annual anxious apparent appropriate automatic available aware awful bad basic beautiful big biological
bitter blind blue bold boring brave brief bright brilliant broad brown busy calm capable careful casual central
certain cheap chemical chief civil classic clean clever cold comfortable commercial common competitive complete
complex comprehensive computational conceptual concrete confident conscious conservative consistent constant
contemporary conventional cool correct creative critical crucial cultural curious current cute daily dangerous
dark dead dear decent deep defensive democratic dense dependent detailed different difficult digital direct
dirty distinct diverse domestic dominant double dramatic dry due dynamic eager early eastern easy economic
educational effective efficient elderly electric electronic elegant emotional empty entire environmental equal
equivalent essential ethical everyday evident exact excellent exciting existing expensive experimental explicit
external extra extreme fair familiar famous fancy fantastic fast fat federal female final financial fine fiscal
flat flexible fluffy foreign formal former fortunate free frequent fresh friendly full functional fundamental
funny general generous gentle genuine global golden good gorgeous grand grateful great green gross guilty happy
hard harmful healthy heavy helpful hidden high historical holy honest horrible hot huge humble hungry ideal
illegal immediate immense impossible impressive incredible independent indirect industrial inevitable informal
initial inner innocent intelligent intense interactive interesting internal international invisible irrelevant
junior large late legal legitimate lengthy likely linear liquid literary little local logical lonely long loose
loud lovely low loyal lucky magic main major male manual massive mathematical mature maximum meaningful medical
mental mere mild military minimal minor mobile modern modest moral multiple musical mutual narrow national
native natural nearby neat necessary negative nervous neutral nice noble nonlinear normal northern notable
nuclear numerous obvious occasional odd official old operational optimal optional oral ordinary organic
original outstanding overall painful pale parallel partial particular passive peaceful perfect permanent
personal physical plain pleasant poetic polite political poor popular positive possible powerful practical
precious precise previous primary prime prior private probable productive professional profound progressive
prominent proper proud psychological pure purple quick quiet radical random rapid rare raw ready real realistic
reasonable recent red regional regular related relative relevant reliable religious remarkable remote
residential responsible rich right rigid robust romantic rough round royal rural sad safe scared scientific
secondary secure selective senior sensitive separate serious severe shallow sharp short significant silent
silly similar simple single slight slow small smart smooth social soft solar solid southern spare spatial
special specific spiritual stable statistical steady steep sticky strange strategic strict strong structural
stupid subsequent substantial subtle successful sudden sufficient suitable super superior supportive sure
surprised sustainable sweet symbolic systematic tall technical temporary terrible theoretical thick thin tight
tiny tough toxic traditional tropical true typical ugly ultimate unable unclear uncomfortable underlying
unexpected unique universal unknown unlikely unusual upper urban useful usual valid valuable various vast verbal
vertical viable violent virtual visible visual vital vivid vulnerable warm weak wealthy weird western white
whole wide wild willing wise wonderful wooden working worried worth written wrong yellow young
"""

ADVERBS = """
absolutely accordingly actually additionally almost already alternatively always approximately automatically
basically briefly carefully certainly clearly closely commonly completely consequently constantly correctly
currently definitely deliberately directly easily effectively efficiently entirely equally especially
essentially eventually exactly explicitly extremely fairly finally firmly frequently fully generally gently
gradually greatly hardly heavily highly honestly hopefully immediately increasingly indeed initially instead
largely lately literally mainly merely mostly naturally nearly necessarily never nevertheless normally notably
now obviously occasionally originally otherwise particularly perfectly perhaps personally possibly potentially
precisely previously primarily probably properly quickly quietly quite rapidly rarely rather readily really
recently regularly relatively reportedly roughly seriously significantly similarly simply slightly slowly
sometimes soon specifically steadily still strictly strongly subsequently successfully suddenly surely
therefore thoroughly thus today together too truly typically ultimately unfortunately usually virtually widely
yet
"""

TECH_WORDS = """
API HTTP JSON SQL Python JavaScript TypeScript Java Rust Go C++ Linux Docker Kubernetes GPU CPU RAM URL HTML
CSS React Django Flask NumPy pandas PyTorch TensorFlow Git GitHub AWS Azure cache cluster compiler container
dataset debugging deployment dictionary endpoint exception frontend backend gradient hash hyperparameter
integer iterator kernel lambda latency loop matrix middleware module neural node optimizer parameter parser
pipeline pointer query queue recursion regex repository runtime schema scalar socket stack string syntax
tensor thread token tokenizer tuple vector vertex webhook workflow array boolean callback constructor decorator
inheritance interface namespace protocol refactoring router serialization subprocess timestamp transaction
encryption authentication bandwidth benchmark checkpoint embedding inference transformer convolution regression
classification clustering precision recall entropy derivative integral polynomial coefficient theorem lemma
hypothesis variance deviation median logarithm exponent denominator numerator fraction quadratic geometry
triangle rectangle radius diameter circumference perimeter velocity acceleration momentum photon electron
molecule enzyme genome mutation ecosystem photosynthesis carbon oxygen hydrogen nitrogen sodium calcium
"""

NAMES = """
Alice Bob Charlie David Emma Fatima George Hannah Ivan James Kenji Laura Maria Nadia Omar Priya Quentin Rosa
Samuel Tom Uma Victor Wei Xavier Yuki Zara Ahmed Sofia Lucas Chen Aisha Daniel Elena Hiroshi Isabella Jamal
Karen Liam Mohammed Noah Olivia Pedro Rahul Sarah Thomas Anna Michael Jennifer Robert Linda John Patricia Smith
Johnson Williams Brown Garcia Martinez Lee Kim Nguyen Patel London Paris Tokyo Beijing Shanghai Berlin Madrid
Rome Cairo Mumbai Delhi Seoul Moscow Sydney Toronto Chicago Boston Seattle California Texas Florida Canada
Mexico Brazil Argentina Germany France Spain Italy Japan China India Russia Egypt Nigeria Kenya Australia
Europe Africa Asia America Atlantic Pacific Amazon Google Microsoft Apple Tesla Netflix Wikipedia Shakespeare
Einstein Newton Darwin Plato Aristotle Monday Tuesday Wednesday Thursday Friday Saturday Sunday January
February March April May June July August September October November December English Spanish French Chinese
Arabic Hindi Renaissance Olympic
"""

OCCUPATIONS = """
teacher;nurse;software engineer;historian;retired army officer;graduate student in physics;small business
owner;data scientist;marine biologist;urban planner;chef;journalist;high school math teacher;museum curator;
professional violinist;sports analyst;civil engineer;pharmacist;environmental activist;financial analyst;
librarian;film director;biochemist;farmer;architect;game developer;linguist;police detective;economist;
yoga instructor;astronomer;fashion designer;ethical hacker;social worker;wildlife photographer;startup founder;
political science student;retired librarian;cybersecurity expert;novelist;wine sommelier;paramedic;
statistician;blockchain developer;music producer;urban gardener;art historian;community organizer
"""

EMOJI = (
    "😀 😂 😊 😍 🤔 👍 🙏 🎉 🔥 ✨ 💡 🚀 ❤️ 🌟 📚 ✅ ❌ 🌍 🍕 ☕ 🎶 😅 🙌 💪 📈 🧠 🐍 ⚡ 🌸 🥳 👉 😢 😎 🤖 📝 🔍 🎯 💬 🌈 🏆"
).split()

# Other languages: (words, separator, comma, sentence ends, capitalize).
LANGUAGE_WORDS = {
    "zh": """我们 你 他们 这个 那个 问题 方法 系统 数据 学习 研究 发展 社会 经济 文化 历史 技术 科学 教育 环境 可以 需要 应该
非常 重要 因为 所以 但是 如果 虽然 已经 正在 通过 进行 提高 影响 分析 结果 模型 计算 时间 地方 中国 世界 人们 生活 工作 公司
市场 政府 国家 城市 学生 老师 孩子 朋友 家庭 健康 安全 质量 能力 经验 信息 网络 用户 产品 服务 设计 管理 计划 目标 过程 条件
关系 作用 方面 内容 部分 情况 原因 主要 不同 相关 具体 基本 简单 复杂 有效 提供 包括 使用 选择 建议 解决 理解 认为 表示 发现
出现 保持 支持 增加 减少 实现 确保 以及 并且 或者 而且 其中 之间 一些 许多 每个 这种 的 了 是 在 和 有 也 都 就 很 不 会 要 对
从 与 为 将 被 把 让 人工智能 编程 函数 变量 文章 故事 翻译 总结""",
    "ja": """これ それ 私 あなた 彼ら 問題 方法 システム データ 学習 研究 社会 経済 文化 歴史 技術 科学 教育 環境 日本 世界
人々 生活 仕事 会社 市場 政府 学生 先生 子供 友達 家族 健康 安全 情報 ネットワーク ユーザー 製品 サービス 設計 管理 計画 目標
結果 分析 重要 必要 簡単 複雑 大切 様々な 新しい 大きな 小さな 多くの ために について によって として では には から まで より
が を に は で と も の です ます しました できます あります います 考えます 思います 使用して 提供する 理解する 説明します
確認して ください 例えば しかし そして また つまり 特に さらに 東京 プログラム 関数 物語 翻訳""",
    "ko": """우리는 당신은 그들은 이것은 문제 방법 시스템 데이터 학습 연구 사회 경제 문화 역사 기술 과학 교육 환경 한국 세계
사람들 생활 일 회사 시장 정부 학생 선생님 아이들 친구 가족 건강 안전 정보 네트워크 사용자 제품 서비스 설계 관리 계획 목표
결과 분석 중요한 필요한 간단한 복잡한 새로운 큰 작은 많은 위해 대해 통해 으로 에서 하고 있습니다 합니다 했습니다 수
있습니다 것입니다 그리고 하지만 또한 예를 들어 특히 따라서 가장 매우 다양한 좋은 이해 설명 사용 제공 확인 개발 변화 과정
서울 프로그램 함수 이야기 번역""",
    "ar": """نحن أنت هم هذا هذه ذلك مشكلة طريقة نظام بيانات تعلم بحث مجتمع اقتصاد ثقافة تاريخ تقنية علم تعليم بيئة العالم
الناس حياة عمل شركة سوق حكومة طالب معلم أطفال صديق عائلة صحة أمان معلومات شبكة مستخدم منتج خدمة تصميم إدارة خطة هدف نتيجة
تحليل مهم ضروري بسيط معقد جديد كبير صغير كثير من في على إلى عن مع أن التي الذي هو هي كان يمكن يجب لكن أيضا لذلك مثل بين كل
بعض عندما حيث قد لا ما يتم خلال حول الأول الثاني الكتاب المدرسة المدينة الوقت اليوم برنامج دالة قصة ترجمة""",
    "hi": """हम आप वे यह वह समस्या तरीका प्रणाली डेटा सीखना शोध समाज अर्थव्यवस्था संस्कृति इतिहास तकनीक विज्ञान शिक्षा
पर्यावरण भारत दुनिया लोग जीवन काम कंपनी बाज़ार सरकार छात्र शिक्षक बच्चे दोस्त परिवार स्वास्थ्य सुरक्षा जानकारी नेटवर्क
उपयोगकर्ता उत्पाद सेवा डिज़ाइन प्रबंधन योजना लक्ष्य परिणाम विश्लेषण महत्वपूर्ण आवश्यक सरल जटिल नया बड़ा छोटा कई का की के को
में से पर और है हैं था थे होता सकते चाहिए लेकिन भी इसलिए जैसे बीच हर कुछ जब जहाँ नहीं क्या करना किया गया द्वारा लिए साथ
बहुत अधिक कहानी अनुवाद""",
    "ru": """мы вы они это этот эта проблема метод система данные обучение исследование общество экономика культура история
технология наука образование среда мир люди жизнь работа компания рынок правительство студент учитель дети друг семья здоровье
безопасность информация сеть пользователь продукт сервис дизайн управление план цель результат анализ важный необходимый
простой сложный новый большой маленький много в на с по к из для от о и но а или что как также поэтому например между
каждый некоторые когда где не может должен был была были будет является можно нужно очень более время год день город
страна вопрос ответ пример решение задача функция значение программа рассказ перевод""",
    "es": """el la los las de en y que a un una es por para con no se su al lo como más pero sus le ya o este sí porque
esta entre cuando muy sin sobre también me hasta hay donde quien desde todo nos durante todos uno les ni contra otros ese
eso ante ellos esto antes algunos qué unos yo otro otras otra él tanto esa estos mucho quienes nada muchos cual poco ella
estar estas algunas algo nosotros problema método sistema datos aprendizaje investigación sociedad economía cultura
historia tecnología ciencia educación ambiente mundo gente vida trabajo empresa mercado gobierno estudiante profesor
niños amigo familia salud seguridad información red usuario producto servicio diseño gestión plan objetivo resultado
análisis importante necesario simple complejo nuevo grande pequeño puede debe tiene hacer tiempo año día ciudad país
pregunta respuesta ejemplo solución""",
    "fr": """le la les de des du un une et est en que qui pour dans sur pas plus par avec ce il elle nous vous ils au aux se
ne son sa ses mais ou comme tout bien être avoir fait peut doit entre aussi donc très sans sous problème méthode système
données apprentissage recherche société économie culture histoire technologie science éducation environnement monde
gens vie travail entreprise marché gouvernement étudiant professeur enfants ami famille santé sécurité information
réseau utilisateur produit service conception gestion plan objectif résultat analyse important nécessaire simple
complexe nouveau grand petit temps année jour ville pays question réponse exemple solution c'est qu'il d'un l'on""",
}
LANGUAGE_FORMAT = {  # word separator, comma, sentence end marks (repetition = weight), capitalize sentences
    "en": (" ", ",", "." * 40 + "??!", True),
    "zh": ("", "，", "。" * 12 + "？！", False),
    "ja": ("", "、", "。" * 12 + "？！", False),
    "ko": (" ", ",", "." * 12 + "?!", False),
    "ar": (" ", "،", "." * 12 + "؟!", False),
    "hi": (" ", ",", "।" * 12 + "?!", False),
    "ru": (" ", ",", "." * 12 + "?!", True),
    "es": (" ", ",", "." * 12 + "?!", True),
    "fr": (" ", ",", "." * 12 + "?!", True),
}


def inflect_verb(verb: str) -> list[str]:
    if verb.endswith(("s", "x", "z", "ch", "sh")):
        third = verb + "es"
    elif verb.endswith("y") and verb[-2] not in "aeiou":
        third = verb[:-1] + "ies"
    else:
        third = verb + "s"
    if verb in DOUBLED_VERBS:
        past, ing = verb + verb[-1] + "ed", verb + verb[-1] + "ing"
    elif verb.endswith("ie"):
        past, ing = verb + "d", verb[:-2] + "ying"
    elif verb.endswith("ee"):
        past, ing = verb + "d", verb + "ing"
    elif verb.endswith("e"):
        past, ing = verb + "d", verb[:-1] + "ing"
    elif verb.endswith("y") and verb[-2] not in "aeiou":
        past, ing = verb[:-1] + "ied", verb + "ing"
    else:
        past, ing = verb + "ed", verb + "ing"
    return [verb, third, past, ing]


IRREGULAR_PLURALS = {
    "half": "halves", "knife": "knives", "life": "lives", "wife": "wives", "child": "children", "woman": "women",
    "person": "people", "foot": "feet", "tooth": "teeth", "mouse": "mice", "analysis": "analyses",
    "crisis": "crises", "basis": "bases", "criteria": "criteria", "people": "peoples", "thesis": "theses",
}
MASS_NOUNS = frozenset("""advice information knowledge research evidence equipment furniture homework music news software
traffic water weather wealth health safety physics math chemistry psychology literature poetry pollution
education freedom courage wisdom sympathy violence hunger pride faith peace privacy labor satisfaction butter
cheese rice salt sand snow soil sugar juice beer dirt luck money mud oil gold silver grass childhood
friendship leadership membership maintenance marketing management engineering shopping housing""".split())


def plural(noun: str) -> str | None:
    if noun in MASS_NOUNS:
        return None
    if noun in IRREGULAR_PLURALS:
        return IRREGULAR_PLURALS[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def plural_or_same(noun: str) -> str:
    return plural(noun) or noun


def number_tokens() -> list[str]:
    nums = [str(k) for k in range(0, 32)] + [str(k) for k in range(35, 101, 5)]
    nums += [str(y) for y in range(1900, 2026)]
    nums += ["0.5", "1.5", "2.5", "3.14", "9.81", "0.05", "0.01", "0.25", "12.5", "99.9", "4.2", "7.8"]
    nums += [f"{p}%" for p in (5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 80, 90, 95, 100)]
    nums += ["$5", "$10", "$20", "$50", "$100", "$250", "$1,000", "$2.5", "$15,000", "€30", "£12"]
    nums += ["150", "200", "250", "300", "365", "400", "500", "750", "1,000", "1,200", "2,500", "10,000", "50,000",
             "1 million", "3 billion", "24/7", "#1", "(1)", "(2)", "1st", "2nd", "3rd", "10th", "5km", "20kg"]
    return nums
