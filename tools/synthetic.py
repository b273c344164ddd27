"""Deterministic synthetic conversations in the schema of ``allenai/tulu-3-sft-mixture``.

Each row is ``{"id": str, "messages": [{"role", "content"}, ...], "source": str}`` with roles
``system`` (first only) / ``user`` / ``assistant`` alternating and ending on an assistant turn, like Tulu 3.
The mix is modelled on Tulu 3's sources (persona math, code, Aya multilingual, WildChat, FLAN, NuminaMath-TIR,
safety data, ...): system prompts (~15%), multi-turn (~20%, 2-6 pairs), fenced code with indentation, LaTeX,
non-Latin scripts and emoji, a long tail with ~0.5% conversations over 40,000 characters (> 8,192 Qwen
tokens), and ~0.3% of the oddities real data has (empty or whitespace-only answers, chat-template control text
inside a user message, leading/trailing newlines). The text is assembled from an embedded Zipf-weighted word
list of a few thousand English word forms plus smaller lists for other languages: it is not language, but its
tokenization and compression behave roughly like real text.

Determinism: conversation ``i`` depends only on ``(seed, i)`` (its own ``random.Random(f"...:{seed}:{i}")``,
seeded through SHA-512 of the string, stable across Python versions and platforms) and only uses stable
operations (``getrandbits``, ``random``, ``choices`` without weights; ``randrange`` and ``shuffle`` when the
tables are built at import; integer or single IEEE float operations; no ``hash()``, no float ``sum``, no
transcendental functions, no set ordering). Generating ``n`` conversations therefore yields the prefix of
generating any larger ``n`` (checked identical on CPython 3.11 and 3.12).

Speed: about 0.1 ms per conversation (~3,200 characters on average): 200,000 conversations take 20-30 s on one
core (``synthetic_conversations``; writing Arrow or Parquet adds a little).

    >>> rows = list(synthetic_conversations(3, seed=7))
    >>> rows == list(synthetic_conversations(5, seed=7))[:3]
    True
    >>> sorted(rows[0])
    ['id', 'messages', 'source']
"""

from __future__ import annotations

import array
import os
import random
import sys
from bisect import bisect
from operator import itemgetter
from typing import Iterator

import pyarrow as pa

__all__ = [
    "SCHEMA",
    "SOURCES",
    "synthetic_conversations",
    "synthetic_batches",
    "write_synthetic_parquet",
    "write_synthetic_arrow",
]

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("messages", pa.list_(pa.struct([("content", pa.string()), ("role", pa.string())]))),
        ("source", pa.string()),
    ]
)

# --------------------------------------------------------------------------------------------------------
# Vocabulary. Function words are ranked in rough frequency order; content words get the following ranks in a
# fixed shuffled order; a word of rank r is drawn with weight 1 / (r + 2.7) (Zipf).

_FUNCTION = """
the of and to a in is that for it as with was on be by this are or from at which an not have can but we you
they their has more one will all also been its if these his when there other such were so had some how may
than into would only most each what about new used them our any between through first two many do both could
over those where should while because well then her she he who make made even like just after same three
since under much very without during before within several often however your my I it's don't can't there's
let's here up out no yes I'm you're we're they're doesn't isn't aren't won't that's I've you'll us me him
them both either neither whether although though unless until upon via per among across toward towards
against along around behind beyond near above below off onto down again once further more less few own
"""

_NOUNS = """
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

# Regular verbs, inflected by rule (-s, -ed, -ing); the doubling ones are listed in _DOUBLE.
_VERBS = """
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
_DOUBLE = frozenset("admit control occur plan prefer refer shop step stop submit".split())

_IRREGULAR = """
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

_ADJECTIVES = """
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

_ADVERBS = """
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

_TECH = """
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

_NAMES = """
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

_OCCUPATIONS = """
teacher;nurse;software engineer;historian;retired army officer;graduate student in physics;small business
owner;data scientist;marine biologist;urban planner;chef;journalist;high school math teacher;museum curator;
professional violinist;sports analyst;civil engineer;pharmacist;environmental activist;financial analyst;
librarian;film director;biochemist;farmer;architect;game developer;linguist;police detective;economist;
yoga instructor;astronomer;fashion designer;ethical hacker;social worker;wildlife photographer;startup founder;
political science student;retired librarian;cybersecurity expert;novelist;wine sommelier;paramedic;
statistician;blockchain developer;music producer;urban gardener;art historian;community organizer
"""

_EMOJI = (
    "😀 😂 😊 😍 🤔 👍 🙏 🎉 🔥 ✨ 💡 🚀 ❤️ 🌟 📚 ✅ ❌ 🌍 🍕 ☕ 🎶 😅 🙌 💪 📈 🧠 🐍 ⚡ 🌸 🥳 👉 😢 😎 🤖 📝 🔍 🎯 💬 🌈 🏆"
).split()

# Other languages: (words, separator, comma, sentence ends, capitalize).
_LANG_WORDS = {
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
_LANG_FORMAT = {  # word separator, comma, sentence end marks (repetition = weight), capitalize sentences
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


def _inflect_verb(verb: str) -> list[str]:
    if verb.endswith(("s", "x", "z", "ch", "sh")):
        third = verb + "es"
    elif verb.endswith("y") and verb[-2] not in "aeiou":
        third = verb[:-1] + "ies"
    else:
        third = verb + "s"
    if verb in _DOUBLE:
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


_IRREGULAR_PLURAL = {
    "half": "halves", "knife": "knives", "life": "lives", "wife": "wives", "child": "children", "woman": "women",
    "person": "people", "foot": "feet", "tooth": "teeth", "mouse": "mice", "analysis": "analyses",
    "crisis": "crises", "basis": "bases", "criteria": "criteria", "people": "peoples", "thesis": "theses",
}
_MASS = frozenset("""advice information knowledge research evidence equipment furniture homework music news software
traffic water weather wealth health safety physics math chemistry psychology literature poetry pollution
education freedom courage wisdom sympathy violence hunger pride faith peace privacy labor satisfaction butter
cheese rice salt sand snow soil sugar juice beer dirt luck money mud oil gold silver grass childhood
friendship leadership membership maintenance marketing management engineering shopping housing""".split())


def _plural(noun: str) -> str | None:
    if noun in _MASS:
        return None
    if noun in _IRREGULAR_PLURAL:
        return _IRREGULAR_PLURAL[noun]
    if noun.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _nouns(noun: str) -> str:
    return _plural(noun) or noun


def _number_tokens() -> list[str]:
    nums = [str(k) for k in range(0, 32)] + [str(k) for k in range(35, 101, 5)]
    nums += [str(y) for y in range(1900, 2026)]
    nums += ["0.5", "1.5", "2.5", "3.14", "9.81", "0.05", "0.01", "0.25", "12.5", "99.9", "4.2", "7.8"]
    nums += [f"{p}%" for p in (5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 80, 90, 95, 100)]
    nums += ["$5", "$10", "$20", "$50", "$100", "$250", "$1,000", "$2.5", "$15,000", "€30", "£12"]
    nums += ["150", "200", "250", "300", "365", "400", "500", "750", "1,000", "1,200", "2,500", "10,000", "50,000",
             "1 million", "3 billion", "24/7", "#1", "(1)", "(2)", "1st", "2nd", "3rd", "10th", "5km", "20kg"]
    return nums


def _apportion(weights: list[int], slots: int) -> list[int]:
    """Integer slot counts proportional to integer ``weights`` (largest remainders, ties by index), each at least
    1. Integer arithmetic only: no float sum, whose rounding changed in Python 3.12."""
    total = sum(weights)
    counts = [max(1, w * slots // total) for w in weights]
    left = slots - sum(counts)
    order = sorted(range(len(weights)), key=lambda k: (-(weights[k] * slots % total), k))
    for k in order[:max(left, 0)]:
        counts[k] += 1
    return counts


def _zipf(n: int, offset: float) -> list[int]:
    """Integer Zipf weights ``1e12 / (rank + offset)`` (one IEEE division each: the same everywhere)."""
    return [int(1e12 / (r + offset)) for r in range(n)]


def _cap(word: str) -> str:
    return word[0].upper() + word[1:]


_TABLE_SIZE = 1 << 16  # texts are drawn 16 bits per word


def _text_table(plain: list[str], lang: str, sentence: int, comma_share: int, seed: str) -> tuple[str, ...]:
    """A 2**16-slot table: ``plain`` words plus punctuated entries, so that a paragraph is one lookup and one join.

    A sentence boundary is one entry, ``"word. Next"`` (end mark, separator, capitalized next word), drawn once
    every ``sentence`` words on average; ``"word,"`` entries make about one word in ``comma_share`` carry a comma.
    """
    sep, comma, ends, cap = _LANG_FORMAT[lang]
    r = random.Random(seed)
    n_bound, n_comma = _TABLE_SIZE // sentence, _TABLE_SIZE // comma_share
    table = list(plain[: _TABLE_SIZE - n_bound - n_comma])
    for _ in range(n_comma):
        table.append(plain[r.randrange(len(plain))] + comma)
    for _ in range(n_bound):
        nxt = plain[r.randrange(len(plain))]
        table.append(plain[r.randrange(len(plain))] + ends[r.randrange(len(ends))] + sep + (_cap(nxt) if cap else nxt))
    r.shuffle(table)
    return tuple(table)


def _build_english() -> tuple[tuple[str, ...], list[str]]:
    """Plain Zipf table of English word forms (and a few number tokens), plus the words by rank."""
    function = list(dict.fromkeys(_FUNCTION.split()))
    content: list[str] = []
    for noun in _NOUNS.split():
        content += [noun, _plural(noun) or noun]
    for verb in _VERBS.split():
        content += _inflect_verb(verb)
    for text in (_IRREGULAR, _ADJECTIVES, _ADVERBS, _TECH, _NAMES):
        content += text.split()
    seen = set(function)
    unique = [w for w in dict.fromkeys(content) if w not in seen]
    random.Random("sftpack-vocabulary").shuffle(unique)
    ranked = function + unique
    number_slots = 1400
    counts = _apportion(_zipf(len(ranked), 2.7), _TABLE_SIZE - number_slots)
    numbers = _number_tokens()
    table: list[str] = []
    for word, count in zip(ranked, counts):
        table += [word] * count
    for k in range(number_slots):
        table.append(numbers[k % len(numbers)])
    random.Random("sftpack-plain").shuffle(table)
    return tuple(table), ranked


def _build_lang_plain(words: list[str]) -> tuple[str, ...]:
    order = list(words)
    random.Random("sftpack-lang").shuffle(order)
    counts = _apportion(_zipf(len(order), 6.0), _TABLE_SIZE)
    table: list[str] = []
    for word, count in zip(order, counts):
        table += [word] * count
    random.Random("sftpack-lang-plain").shuffle(table)
    return tuple(table)


_EN_PLAIN, _ = _build_english()
_EN_CAP = {w: _cap(w) for w in dict.fromkeys(_EN_PLAIN)}


def _pair_table(table: tuple[str, ...], lang: str, distinct: int, seed: str) -> tuple[str, ...]:
    """2**16 slots holding ``distinct`` two-entry strings of ``table``: a paragraph is drawn two words per lookup
    (half the work); ``distinct`` pairs are enough that repeats stay as rare as in real text."""
    sep = _LANG_FORMAT[lang][0]
    r = random.Random(seed)
    pairs = [table[r.getrandbits(16)] + sep + table[r.getrandbits(16)] for _ in range(distinct)]
    return tuple(pairs * (_TABLE_SIZE // distinct))


_TABLES = {"en": _pair_table(_text_table(_EN_PLAIN, "en", 17, 14, "sftpack-en"), "en", _TABLE_SIZE, "sftpack-en-pairs")}
for _lang, _text in _LANG_WORDS.items():
    _single = _text_table(_build_lang_plain(_text.split()), _lang, 10, 9, f"sftpack-{_lang}")
    _TABLES[_lang] = _pair_table(_single, _lang, 8192, f"sftpack-{_lang}-pairs")
del _lang, _text, _single
_SPLIT = {lang: ends[0] + sep for lang, (sep, _, ends, _) in _LANG_FORMAT.items()}
_KEYWORDS = frozenset("""return break continue print import class try while for else case default type switch function
var let const new delete with yield lambda global pass raise from def del assert async await true false none null
self this super static public private protected int float str list dict set len range sum max min open input object
string package interface struct func mut use mod impl trait enum loop where select order group join limit having
count table values insert update match char long short double byte final export require catch throw finally""".split())
_IDENT_WORDS = tuple(w for w in dict.fromkeys(_NOUNS.split() + _VERBS.split()) if 3 <= len(w) <= 9 and w not in _KEYWORDS)
_PEOPLE = tuple(_NAMES.split()[:50])
_OCCUPATION_LIST = tuple(o.strip().replace("\n", " ") for o in _OCCUPATIONS.split(";") if o.strip())
_BIG_ENDIAN = sys.byteorder == "big"


# --------------------------------------------------------------------------------------------------------
# Text primitives. Small uniform draws use ``int(rng.random() * k)`` (faster than ``randrange``; plain IEEE
# arithmetic, so the same everywhere).


def _rb(rng: random.Random, k: int) -> int:
    return int(rng.random() * k)


def _ri(rng: random.Random, a: int, b: int) -> int:
    return a + int(rng.random() * (b - a + 1))


def _ch(rng: random.Random, seq):
    return seq[int(rng.random() * len(seq))]


def _u16(rng: random.Random, k: int) -> array.array:
    a = array.array("H")
    a.frombytes(rng.getrandbits(16 * k).to_bytes(2 * k, "little"))
    if _BIG_ENDIAN:
        a.byteswap()
    return a


class _Rng(random.Random):
    """``random.Random`` plus a buffer of pre-drawn plain words for phrases and titles."""

    def __init__(self, seed: str) -> None:
        super().__init__(seed)
        self.wbuf: tuple[str, ...] = ()
        self.wpos = 0


def _lang_para(rng: random.Random, lang: str, nwords: int) -> str:
    """Text of about ``nwords`` words in ``lang``: sentences (capitalized where the script has case), commas."""
    sep, _, ends, cap = _LANG_FORMAT[lang]
    text = sep.join(itemgetter(*_u16(rng, max((nwords + 1) // 2, 2)))(_TABLES[lang]))
    if text[-1] not in ends:
        text = text.rstrip(",，、،") + ends[0]
    return _cap(text) if cap else text


def _pieces(rng: random.Random, lang: str, nwords: int, k: int) -> list[str]:
    """About ``nwords`` words of text cut at sentence ends into (at most) ``k`` pieces of similar length."""
    text = _lang_para(rng, lang, nwords)
    mark = _SPLIT[lang]
    step = len(text) // k
    out = []
    last = 0
    for j in range(1, k):
        p = text.find(mark, max(last, j * step))
        if p < 0:
            break
        p += len(mark)
        out.append(text[last:p].rstrip(" "))
        last = p
    if last < len(text):
        out.append(text[last:])
    return out


def _para(rng: random.Random, nwords: int) -> str:
    return _lang_para(rng, "en", nwords)


def _wslice(rng: _Rng, k: int) -> tuple[str, ...]:
    p = rng.wpos
    if p + k > len(rng.wbuf):
        rng.wbuf = itemgetter(*_u16(rng, 64))(_EN_PLAIN)
        p = 0
    rng.wpos = p + k
    return rng.wbuf[p:p + k]


def _phrase(rng: _Rng, k: int) -> str:
    """``k`` plain lowercase-ish words (no punctuation)."""
    return " ".join(_wslice(rng, k))


def _title(rng: _Rng, k: int) -> str:
    return " ".join(map(_EN_CAP.__getitem__, _wslice(rng, k)))


def _ident(rng: random.Random, parts: int = 2) -> str:
    return "_".join(_ch(rng, _IDENT_WORDS) for _ in range(parts))


def _camel(rng: random.Random, parts: int = 2) -> str:
    return "".join(_ch(rng, _IDENT_WORDS).capitalize() for _ in range(parts))


def _scaled(rng: random.Random, median: int) -> int:
    """A right-skewed length around ``median`` (ratio table, no transcendental functions)."""
    ratio = _SKEW[_rb(rng, len(_SKEW))]
    return max(1, int(median * ratio * (0.85 + 0.3 * rng.random())))


_SKEW = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.0, 1.1, 1.2, 1.3, 1.45, 1.6, 1.8, 2.1, 2.5, 3.2)


def _markdown(rng: random.Random, nwords: int, lang: str = "en", emoji: float = 0.0) -> str:
    """A structured answer of about ``nwords`` words: paragraphs, headings, lists, bold, quotes."""
    sep = _LANG_FORMAT[lang][0]
    pieces = _pieces(rng, lang, nwords, max(3, nwords // 18))
    blocks = [pieces[0]]
    i, n = 1, len(pieces)
    while i < n:
        x = rng.getrandbits(48)
        r = x & 1023
        take = 1 + (x >> 10) % 3
        if r < 460:
            blocks.append(sep.join(pieces[i:i + take]))
        elif r < 630:
            level = "##" if (x >> 12) & 1 else "###"
            head = _title(rng, 2 + (x >> 13) % 4) if lang == "en" else _lang_para(rng, lang, 4)[:-1]
            blocks.append(f"{level} {head}\n\n" + sep.join(pieces[i:i + take]))
        elif r < 900:
            take = 3 + (x >> 15) % 4
            numbered, bold = (x >> 18) & 1, lang == "en" and (x >> 19) % 5 < 3
            icons = emoji and rng.random() < emoji * 5  # a list with an emoji on each item
            lines = []
            for j, body in enumerate(pieces[i:i + take]):
                if bold:
                    body = f"**{_title(rng, 1 + (x >> (20 + 2 * j)) % 3)}**: {body}"
                if icons:
                    body = _EMOJI[(x >> (20 + 3 * j)) % len(_EMOJI)] + " " + body
                lines.append(f"{j + 1}. {body}" if numbered else f"- {body}")
            blocks.append("\n".join(lines))
        elif r < 960:
            take = 1
            blocks.append("> " + pieces[i])
        else:
            take = 1
            blocks.append(pieces[i] + (" " + _EMOJI[(x >> 20) % len(_EMOJI)] if emoji else ""))
        i += take
    if emoji and rng.random() < emoji * 3:
        blocks[-1] += " " + "".join(_ch(rng, _EMOJI) for _ in range(1 + _rb(rng, 3)))
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------------------------------------
# Code.


def _py_expr(rng: random.Random, names: list[str]) -> str:
    x = rng.getrandbits(64)
    n = names[(x >> 10) % len(names)]
    r = x & 1023
    k = (x >> 20) & 127
    w = _IDENT_WORDS[(x >> 27) % len(_IDENT_WORDS)]
    if r < 143:
        return str(k)
    if r < 246:
        return f'"{w}"'
    if r < 328:
        return f"len({n})"
    if r < 410:
        return f"{n} * {2 + k % 9}"
    if r < 492:
        return f"{n}[{k % 6}]"
    if r < 594:
        v = "xyvkei"[(x >> 40) % 6]
        return f"[{v} for {v} in {n} if {v} > {k % 51}]"
    if r < 676:
        return f'{n}.get("{w}", {k % 10})'
    if r < 799:
        return f"{w}_{_IDENT_WORDS[(x >> 40) % len(_IDENT_WORDS)]}({n}, {1 + k % 9})"
    if r < 881:
        return f"sum({n}) / max(len({n}), 1)"
    if r < 952:
        return f'f"{_phrase(rng, 2)} {{{n}}}"'
    return f'{{"{w}": {n}, "{_IDENT_WORDS[(x >> 40) % len(_IDENT_WORDS)]}": {k % 100}}}'


_EXCEPTIONS = ("ValueError", "KeyError", "TypeError", "OSError", "ZeroDivisionError", "RuntimeError")


def _py_block(rng: random.Random, ind: int, depth: int, names: list[str], n: int) -> list[str]:
    pad = "    " * ind
    lines: list[str] = []
    for _ in range(n):
        x = rng.getrandbits(64)
        r = x & 1023
        target = names[(x >> 10) % len(names)]
        w = _IDENT_WORDS[(x >> 20) % len(_IDENT_WORDS)]
        k = (x >> 32) & 1023
        sub = 1 + (x >> 42) % 3
        if depth < 3 and r < 307:
            kind = (x >> 48) % 6
            if kind <= 1:
                lines.append(f"{pad}for {w} in {target}:")
                lines += _py_block(rng, ind + 1, depth + 1, names + [w], sub + (x >> 56) % 2)
            elif kind == 2:
                lines.append(f"{pad}if {target} > {k % 101}:")
                lines += _py_block(rng, ind + 1, depth + 1, names, sub)
                if (x >> 56) & 3 == 0:
                    lines.append(f"{pad}elif {target} == {_py_expr(rng, names)}:")
                    lines += _py_block(rng, ind + 1, depth + 1, names, 1)
                if (x >> 58) & 1:
                    lines.append(f"{pad}else:")
                    lines += _py_block(rng, ind + 1, depth + 1, names, 1 + (x >> 59) % 2)
            elif kind == 3:
                lines.append(f"{pad}while {target} < {k}:")
                lines += _py_block(rng, ind + 1, depth + 1, names, sub)
            elif kind == 4:
                lines.append(f"{pad}try:")
                lines += _py_block(rng, ind + 1, depth + 1, names, sub)
                lines.append(f"{pad}except {_EXCEPTIONS[(x >> 56) % 6]} as exc:")
                lines.append(f'{pad}    logger.warning("{_phrase(rng, 3)}: %s", exc)')
            else:
                lines.append(f'{pad}with open({target}, "r", encoding="utf-8") as handle:')
                lines += _py_block(rng, ind + 1, depth + 1, names + ["handle"], sub)
        elif r < 563:
            v = w if (x >> 48) & 3 else f"{w}_{_IDENT_WORDS[(x >> 50) % len(_IDENT_WORDS)]}"
            lines.append(f"{pad}{v} = {_py_expr(rng, names)}")
            names = names + [v]
        elif r < 645:
            lines.append(f"{pad}{target} += {_py_expr(rng, names)}")
        elif r < 748:
            lines.append(f"{pad}{target}.append({_py_expr(rng, names)})")
        elif r < 860:
            lines.append(f"{pad}# {_phrase(rng, 4 + k % 8)}")
        else:
            lines.append(f'{pad}print(f"{_phrase(rng, 2)}: {{{target}}}")')
    return lines


def _py_function(rng: random.Random, ind: int = 0, method: bool = False) -> list[str]:
    pad = "    " * ind
    name = _ident(rng, 2 + _rb(rng, 2))
    args = list(dict.fromkeys(_ch(rng, _IDENT_WORDS) for _ in range(1 + _rb(rng, 3))))
    hints = rng.random() < 0.5
    types = ("int", "float", "str", "list[int]", "dict[str, int]", "list[str]", "bool")
    shown = [f"{a}: {_ch(rng, types)}" if hints else a for a in args]
    if method:
        shown = ["self"] + shown
    ret = f" -> {_ch(rng, types)}" if hints else ""
    lines = [f"{pad}def {name}({', '.join(shown)}){ret}:"]
    if rng.random() < 0.7:
        doc = _para(rng, 6 + _rb(rng, 10))
        if rng.random() < 0.4:
            lines += [f'{pad}    """{doc}', "", f"{pad}    Args:"]
            lines += [f"{pad}        {a}: {_phrase(rng, 3 + _rb(rng, 5))}." for a in args]
            lines += [f'{pad}    """']
        else:
            lines.append(f'{pad}    """{doc}"""')
    lines += _py_block(rng, ind + 1, 0, args, 2 + _rb(rng, 7))
    lines.append(f"{pad}    return {_py_expr(rng, args)}")
    return lines


def _python(rng: random.Random, nlines: int) -> str:
    imports = ("import os", "import sys", "import json", "import math", "import re",
               "from collections import defaultdict", "from typing import Optional", "import numpy as np",
               "import pandas as pd", "from dataclasses import dataclass", "import random")
    x = rng.getrandbits(2 * len(imports))
    lines = sorted(["import logging"] + [imp for k, imp in enumerate(imports) if (x >> (2 * k)) & 3 == 0])
    lines += ["", "logger = logging.getLogger(__name__)", ""]
    while len(lines) < nlines:
        lines.append("")
        if rng.random() < 0.25:
            lines.append(f"class {_camel(rng, 2)}:")
            lines.append(f'    """{_para(rng, 8 + _rb(rng, 12))}"""')
            lines.append("")
            args = [_ch(rng, _IDENT_WORDS) for _ in range(1 + _rb(rng, 3))]
            lines.append(f"    def __init__(self, {', '.join(args)}):")
            lines += [f"        self.{a} = {a}" for a in args]
            for _ in range(1 + _rb(rng, 3)):
                lines.append("")
                lines += _py_function(rng, 1, method=True)
        else:
            lines += _py_function(rng)
        lines.append("")
    lines += ["", 'if __name__ == "__main__":']
    lines += _py_block(rng, 1, 2, ["sys.argv", "data"], 2 + _rb(rng, 3))
    return "\n".join(lines)


_CLIKE = {
    "javascript": dict(ind="  ", decl="const {v} = {e};", forl="for (const {x} of {n}) {{", cond="if ({n}.length > {k}) {{",
                       out="console.log(`{p}: ${{{v}}}`);", func="function {c}({a}) {{", ret="return {e};", close="}}",
                       comment="// {p}", pre=""),
    "typescript": dict(ind="  ", decl="const {v}: number = {e};", forl="for (const {x} of {n}) {{",
                       cond="if ({n}.length > {k}) {{", out="console.log(`{p}: ${{{v}}}`);",
                       func="export function {c}({a}: number[]): number {{", ret="return {e};", close="}}",
                       comment="// {p}", pre="import {{ readFileSync }} from \"fs\";\n\n"),
    "cpp": dict(ind="    ", decl="auto {v} = {e};", forl="for (const auto& {x} : {n}) {{", cond="if ({n}.size() > {k}) {{",
                out="std::cout << \"{p}: \" << {v} << std::endl;", func="int {s}(const std::vector<int>& {a}) {{",
                ret="return {e};", close="}}", comment="// {p}",
                pre="#include <iostream>\n#include <vector>\n#include <string>\n\n"),
    "java": dict(ind="    ", decl="int {v} = {e};", forl="for (int {x} : {n}) {{", cond="if ({n}.length > {k}) {{",
                 out="System.out.println(\"{p}: \" + {v});", func="public static int {c}(int[] {a}) {{",
                 ret="return {e};", close="}}", comment="// {p}", pre="import java.util.*;\n\n"),
    "rust": dict(ind="    ", decl="let mut {v} = {e};", forl="for {x} in {n}.iter() {{", cond="if {n}.len() > {k} {{",
                 out="println!(\"{p}: {{}}\", {v});", func="fn {s}({a}: &[i32]) -> i32 {{", ret="{e}",
                 close="}}", comment="// {p}", pre="use std::collections::HashMap;\n\n"),
    "go": dict(ind="\t", decl="{v} := {e}", forl="for _, {x} := range {n} {{", cond="if len({n}) > {k} {{",
               out="fmt.Println(\"{p}:\", {v})", func="func {c}({a} []int) int {{", ret="return {e}", close="}}",
               comment="// {p}", pre="package main\n\nimport \"fmt\"\n\n"),
}


def _clike_expr(rng: random.Random, names: list[str]) -> str:
    n = _ch(rng, names)
    r = rng.random()
    if r < 0.3:
        return str(_ri(rng, 0, 1000))
    if r < 0.5:
        return f"{n} + {_ri(rng, 1, 50)}"
    if r < 0.7:
        return f"{n} * {_ri(rng, 2, 9)}"
    if r < 0.85:
        return f"{n}[{_ri(rng, 0, 7)}]"
    return f"{_camel(rng, 2)[0].lower()}{_camel(rng, 1)}({n})"


def _clike_block(rng, syn, depth, names, n) -> list[str]:
    pad = syn["ind"] * depth
    lines = []
    for _ in range(n):
        r = rng.random()
        if depth < 4 and r < 0.3:
            if rng.random() < 0.5:
                x = _ch(rng, _IDENT_WORDS)
                lines.append(pad + syn["forl"].format(x=x, n=_ch(rng, names)))
                lines += _clike_block(rng, syn, depth + 1, names + [x], 1 + _rb(rng, 3))
            else:
                lines.append(pad + syn["cond"].format(n=_ch(rng, names), k=_ri(rng, 0, 20)))
                lines += _clike_block(rng, syn, depth + 1, names, 1 + _rb(rng, 3))
            lines.append(pad + syn["close"].format())
        elif r < 0.7:
            v = _ch(rng, _IDENT_WORDS)
            lines.append(pad + syn["decl"].format(v=v, e=_clike_expr(rng, names)))
            names = names + [v]
        elif r < 0.85:
            lines.append(pad + syn["out"].format(p=_phrase(rng, 2), v=_ch(rng, names)))
        else:
            lines.append(pad + syn["comment"].format(p=_phrase(rng, 3 + _rb(rng, 7))))
    return lines


def _clike(rng: random.Random, lang: str, nlines: int) -> str:
    syn = _CLIKE[lang]
    lines = [syn["pre"].format().rstrip("\n"), ""] if syn["pre"] else []
    while len(lines) < nlines:
        a = _ch(rng, _IDENT_WORDS)
        c = _camel(rng, 2)
        lines.append(syn["func"].format(c=c[0].lower() + c[1:], s=_ident(rng, 2), a=a))
        lines += _clike_block(rng, syn, 1, [a], 2 + _rb(rng, 6))
        lines.append(syn["ind"] + syn["ret"].format(e=_clike_expr(rng, [a])))
        lines.append(syn["close"].format())
        lines.append("")
    if lang == "java":
        head, body = lines[:1], lines[1:]
        lines = head + ["", f"public class {_camel(rng, 2)} {{"] + ["    " + ln if ln else "" for ln in body] + ["}"]
    return "\n".join(lines).rstrip("\n")


def _sql(rng: random.Random) -> str:
    t1, t2 = _nouns(_ch(rng, _IDENT_WORDS)), _nouns(_ch(rng, _IDENT_WORDS))
    c1, c2, c3 = _ch(rng, _IDENT_WORDS), _ch(rng, _IDENT_WORDS), _ch(rng, _IDENT_WORDS)
    return (f"SELECT a.{c1}, COUNT(*) AS {c1}_count, AVG(b.{c2}) AS avg_{c2}\n"
            f"FROM {t1} AS a\nJOIN {t2} AS b ON b.{c1}_id = a.id\n"
            f"WHERE b.{c3} > {_ri(rng, 1, 500)}\n  AND a.created_at >= '{_ri(rng, 2015, 2024)}-01-01'\n"
            f"GROUP BY a.{c1}\nHAVING COUNT(*) > {_ri(rng, 1, 20)}\nORDER BY {c1}_count DESC\n"
            f"LIMIT {_ch(rng, (5, 10, 20, 100))};")


def _code(rng: random.Random, nlines: int) -> tuple[str, str]:
    r = rng.random()
    if r < 0.6:
        return "python", _python(rng, nlines)
    if r < 0.95:
        lang = _ch(rng, tuple(_CLIKE))
        return lang, _clike(rng, lang, nlines)
    return "sql", _sql(rng)


# --------------------------------------------------------------------------------------------------------
# Math.


def _poly(rng: random.Random, v: str) -> str:
    x = rng.getrandbits(48)
    deg = 1 + (x & 3)
    x >>= 2
    out = ""
    for p in range(deg, -1, -1):
        c = 1 + (x & 15) % 15
        keep, neg = (x >> 4) & 3, (x >> 6) & 3 == 0
        x >>= 8
        if p != deg and not keep:
            continue
        coef = "" if c == 1 else str(c)
        body = f"{coef}{v}^{{{p}}}" if p > 1 else f"{coef}{v}" if p == 1 else str(c)
        out = (("-" if neg else "") + body) if not out else f"{out} {'-' if neg else '+'} {body}"
    return out


def _make_tex(rng: random.Random) -> str:
    x = rng.getrandbits(32)
    v = "xyztnkab"[x & 7]
    a, b, c = 1 + ((x >> 3) & 15) % 12, 1 + ((x >> 7) & 31) % 20, 1 + ((x >> 12) & 63) % 50
    r = ((x >> 18) & 255) % 13
    if r <= 1:
        return _poly(rng, v)
    if r == 2:
        return f"\\frac{{{a}{v} + {b}}}{{{c}}}"
    if r == 3:
        return f"\\sqrt{{{a}{v}^2 + {b}}}"
    if r == 4:
        return f"\\sum_{{i=1}}^{{{c}}} {a} i^{{2}}"
    if r == 5:
        return f"\\int_{{0}}^{{{b}}} \\left({_poly(rng, v)}\\right) \\, d{v}"
    if r == 6:
        return f"\\frac{{d}}{{d{v}}}\\left({_poly(rng, v)}\\right)"
    if r == 7:
        return f"{a}\\sin({b}{v}) + \\cos\\left(\\frac{{\\pi}}{{{a + 1}}}\\right)"
    if r == 8:
        return f"e^{{{a}{v}}} - \\ln({b}{v})"
    if r == 9:
        return f"\\begin{{pmatrix}} {a} & {b} \\\\ {c} & {a + b} \\end{{pmatrix}}"
    if r == 10:
        return f"\\lim_{{{v} \\to \\infty}} \\frac{{{a}{v}^2}}{{{b}{v}^2 + {c}}}"
    if r == 11:
        return f"P(X = {a}) = \\binom{{{a + c}}}{{{a}}} p^{{{a}}} (1-p)^{{{c}}}"
    return f"{a}{v} + {b} \\leq {c}"


_TEX_POOL_BITS = 13
_r = random.Random("sftpack-tex")
_TEX_POOL = tuple(_make_tex(_r) for _ in range(1 << _TEX_POOL_BITS))  # drawing from a pool is ~10x faster
del _r


def _tex(rng: random.Random) -> str:
    return _TEX_POOL[rng.getrandbits(_TEX_POOL_BITS)]


def _with_tex(rng: random.Random, text: str) -> str:
    """``text`` with inline LaTeX (``$...$`` or ``\\( ... \\)``) inserted at word breaks, about every 130 characters."""
    m = 1 + len(text) // 130
    step = len(text) // (m + 1)
    out = []
    last = 0
    bits = rng.getrandbits(24 * m)
    for j in range(1, m + 1):
        x = bits & 0xFFFFFF
        bits >>= 24
        p = text.find(" ", j * step + (x >> 15) % (step // 2 + 1))
        if p <= last:
            continue
        tex = _TEX_POOL[x & 8191]
        out.append(text[last:p])
        out.append(f" \\( {tex} \\)" if (x >> 13) & 3 == 0 else f" ${tex}$")
        last = p
    out.append(text[last:])
    return "".join(out)


def _math_text(rng: random.Random, nwords: int) -> str:
    """Prose with inline LaTeX."""
    return _with_tex(rng, _para(rng, nwords))


def _math_solution(rng: random.Random, nwords: int, style: str) -> str:
    pieces = _pieces(rng, "en", nwords, max(3, nwords // 16))
    blocks = [f"To solve the problem, we {_phrase(rng, 6)}. " + pieces[0]]
    part = 1
    i = 1
    while i < len(pieces):
        x = rng.getrandbits(32)
        if x & 3 == 0:
            blocks.append(f"### Part {part}: {_title(rng, 2 + (x >> 2) % 4)}")
            part += 1
        take = 1 + (x >> 4) % 2
        blocks.append(_with_tex(rng, " ".join(pieces[i:i + take])))
        i += take
        rhs = _tex(rng) if (x >> 6) & 1 else str(((x >> 7) & 511) - 50)
        blocks.append(f"\\[\n{_tex(rng)} = {rhs}\n\\]" if (x >> 16) & 1 else f"$$ {_tex(rng)} = {rhs} $$")
        if (x >> 17) % 10 < 3 and i < len(pieces):
            take = 2 + (x >> 21) % 3
            blocks.append("\n".join(f"{j + 1}. {_with_tex(rng, p)}" for j, p in enumerate(pieces[i:i + take])))
            i += take
    answer = _ri(rng, -20, 2000) if rng.random() < 0.7 else f"\\frac{{{_ri(rng, 1, 30)}}}{{{_ri(rng, 2, 40)}}}"
    if style == "persona":
        blocks.append(f"Final Answer: The final answer is ${answer}$. I hope it is correct.")
    elif style == "gsm":
        blocks.append(f"#### {answer}")
    else:
        blocks.append(f"Therefore, the answer is \\(\\boxed{{{answer}}}\\).")
    return "\n\n".join(blocks)


# --------------------------------------------------------------------------------------------------------
# Sources: (name, weight, id style, p_system, p_multi, generator). Weights follow Tulu 3's mixture counts.


def _persona(rng: random.Random, start: bool = True) -> str:
    """``"A chef who ..."`` (``start``) or ``"a chef who ..."``."""
    occ = _ch(rng, _OCCUPATION_LIST)
    article = "an" if occ[0] in "aeiou" else "a"
    return f"{article.capitalize() if start else article} {occ} who {_phrase(rng, 5 + _rb(rng, 8))}"


def _gen_persona_math(rng, lang, turn):
    user = "" if turn else (f"{_persona(rng)}. {_math_text(rng, _scaled(rng, 80))}\n\n"
            f"1. {_math_text(rng, _scaled(rng, 40))}?\n\n2. {_math_text(rng, _scaled(rng, 40))}?")
    return user, _math_solution(rng, _scaled(rng, 120), "persona")


def _gen_gsm(rng, lang, turn):
    user = f"{_persona(rng)}. " + _para(rng, _scaled(rng, 60)) + f" How many {_nouns(_ch(rng, _IDENT_WORDS))} {_phrase(rng, 4)}?"
    steps = []
    total = 0
    for j in range(2 + _rb(rng, 4)):
        a, b = _ri(rng, 2, 60), _ri(rng, 2, 25)
        total += a * b
        steps.append(f"{j + 1}. **{_title(rng, 2)}**: {_para(rng, 12 + _rb(rng, 30))}\n   \\[\n   {a} \\times {b} = {a * b}\n   \\]")
    ans = _para(rng, 15 + _rb(rng, 30)) + "\n\n" + "\n\n".join(steps) + f"\n\n{_para(rng, 10 + _rb(rng, 20))}\n\n#### {total}"
    return user, ans


def _gen_openmath(rng, lang, turn):
    user = _para(rng, _scaled(rng, 55)) + f" How many {_nouns(_ch(rng, _IDENT_WORDS))} does {_ch(rng, _PEOPLE)} have?"
    a, b, c = _ri(rng, 2, 90), _ri(rng, 2, 30), _ri(rng, 1, 40)
    ans = (f"{_para(rng, 20 + _rb(rng, 40))} So {a} * {b} = {a * b}.\n{_para(rng, 15 + _rb(rng, 30))} "
           f"{a * b} + {c} = {a * b + c}.\nThus, the answer is \\boxed{{{a * b + c}}}.")
    return user, ans


def _gen_numina(rng, lang, turn):
    user = "" if turn else _math_text(rng, _scaled(rng, 60))
    v = _ch(rng, "xyz")
    code = (f"import sympy as sp\n\n# {_phrase(rng, 5)}\n{v} = sp.symbols('{v}')\n"
            f"expr = {_ri(rng, 1, 9)}*{v}**2 + {_ri(rng, 1, 9)}*{v} - {_ri(rng, 1, 50)}\n"
            f"solutions = sp.solve(expr, {v})\nprint(solutions)")
    out = f"[{_ri(rng, -9, 9)}/{_ri(rng, 1, 9)}, {_ri(rng, -9, 9)}]"
    ans = (f"{_math_text(rng, _scaled(rng, 35))}\n\n" + "\n".join(f"{j + 1}. {_math_text(rng, 12 + _rb(rng, 20))}" for j in range(2 + _rb(rng, 3)))
           + f"\n\nLet's implement this in Python using sympy:\n\n```python\n{code}\n```\n```output\n{out}\n```\n"
           + _math_solution(rng, _scaled(rng, 50), "boxed"))
    return user, ans


def _gen_algebra(rng, lang, turn):
    user = "" if turn else f"{_persona(rng)}. " + _math_text(rng, _scaled(rng, 55))
    return user, _math_solution(rng, _scaled(rng, 130), "persona")


def _code_answer(rng, nlines, nwords):
    lang, code = _code(rng, nlines)
    pieces = _pieces(rng, "en", nwords, max(3, nwords // 18))
    parts = [pieces[0], f"```{lang}\n{code}\n```", "### Explanation"]
    i = 1
    while i < len(pieces):
        x = rng.getrandbits(32)
        take = 2 + (x & 3)
        parts.append("\n".join(f"{j + 1}. **{_title(rng, 1 + (x >> (2 + j)) % 3)}**: {p}" for j, p in enumerate(pieces[i:i + take])))
        i += take
        if (x >> 10) % 10 < 4 and i < len(pieces):
            parts.append(pieces[i])
            i += 1
    if rng.random() < 0.4:
        parts.append(f"Example usage:\n\n```{lang}\n{_ident(rng, 2)}({_ri(rng, 1, 99)}, \"{_ch(rng, _IDENT_WORDS)}\")\n```\n\nOutput:\n```\n{_phrase(rng, 5)}\n```")
    return "\n\n".join(parts)


def _gen_persona_code(rng, lang, turn):
    user = "" if turn else (f"Write a Python function to {_phrase(rng, 8)}. {_para(rng, _scaled(rng, 90))}\n\n"
            f"Input: {_para(rng, 12)}\n\nOutput: {_para(rng, 10)}\n\nExample:\n```python\n{_ident(rng, 2)} = {[_ri(rng, 0, 99) for _ in range(4)]}\n```")
    return user, _code_answer(rng, _scaled(rng, 13), _scaled(rng, 80))


def _gen_evol(rng, lang, turn):
    if turn:
        user = ""
    elif rng.random() < 0.3:
        _, snippet = _code(rng, 6 + _rb(rng, 15))
        user = f"{_para(rng, _scaled(rng, 40))}\n\n```\n{snippet}\n```\n\n{_para(rng, 15)}"
    else:
        user = f"Develop a {_ch(rng, ('Python', 'JavaScript', 'Java', 'C++', 'Rust', 'Go', 'SQL'))} {_ch(rng, ('function', 'class', 'script', 'program', 'query'))} that {_para(rng, _scaled(rng, 70))}"
    return user, _code_answer(rng, _scaled(rng, 12), _scaled(rng, 60))


def _gen_aya(rng, lang, turn):
    if lang == "en":
        lang = "es"
    user = "" if turn else _lang_para(rng, lang, _scaled(rng, 55))
    if rng.random() < 0.6:
        return user, _lang_para(rng, lang, _scaled(rng, 60))
    return user, _markdown(rng, _scaled(rng, 130), lang, emoji=0.02)


def _gen_wildchat(rng, lang, turn):
    r = rng.random()
    if lang == "en" and r < 0.25:
        return _gen_evol(rng, lang, turn)
    if turn:
        user = ""
    elif r < 0.4:
        user = _lang_para(rng, lang, _scaled(rng, 30))
    elif r < 0.85:
        user = _lang_para(rng, lang, _scaled(rng, 90))
    else:
        user = _lang_para(rng, lang, _scaled(rng, 300)) + "\n\n" + _lang_para(rng, lang, _scaled(rng, 250))
    return user, _markdown(rng, _scaled(rng, 90), lang, emoji=0.03)


def _gen_flan(rng, lang, turn):
    r = _rb(rng, 5)
    if r == 0:
        q = f"Q: {_para(rng, _scaled(rng, 40))}\nOptions:\n- yes\n- no\n- it is not possible to tell\nA:"
        a = f"{_para(rng, _scaled(rng, 45))}\nThe answer is {_ch(rng, ('yes', 'no', 'it is not possible to tell'))}."
    elif r == 1:
        q = f'Premise: "{_para(rng, 18)}"\nHypothesis: "{_para(rng, 10)}"\nIs the hypothesis entailed by the premise?\nLet\'s solve step-by-step:'
        a = _para(rng, _scaled(rng, 45)) + f" The answer is {_ch(rng, ('yes', 'no'))}."
    elif r == 2:
        target = _ch(rng, ("fr", "es", "ru", "zh", "ar"))
        name = {"fr": "French", "es": "Spanish", "ru": "Russian", "zh": "Chinese", "ar": "Arabic"}[target]
        q = f'Translate the following sentence to {name}:\n"{_para(rng, _scaled(rng, 30))}"'
        a = _lang_para(rng, target, _scaled(rng, 30))
    elif r == 3:
        q = f"Write a short summary for this text:\n\n{_para(rng, _scaled(rng, 260))}\n\nSummary:"
        a = _para(rng, _scaled(rng, 35))
    else:
        q = f"{_para(rng, _scaled(rng, 90))}\n\nAnswer the following question: {_para(rng, 12)}"
        a = _para(rng, _scaled(rng, 50))
    return q, a


def _gen_refusal(rng, lang, turn):
    user = "" if turn else _para(rng, _scaled(rng, 30))
    if not turn and rng.random() < 0.5:
        user = f"Imagine you are {_persona(rng, start=False)}. " + _para(rng, _scaled(rng, 160)) + f' Begin by replying with: "Sure, here is {_phrase(rng, 5)}"'
    if rng.random() < 0.5:
        ans = f"I'm sorry, but I can't assist with that request. {_para(rng, _scaled(rng, 45))}"
    else:
        ans = f"Sure, here is {_phrase(rng, 5)}:\n\n" + _markdown(rng, _scaled(rng, 140))
    return user, ans


def _gen_coconot(rng, lang, turn):
    user = _para(rng, _scaled(rng, 22))
    lead = _ch(rng, ("I'm sorry, but I can't", "As an AI, I don't have the ability to", "I'm unable to",
                       "Unfortunately, I can't"))
    return user, f"{lead} {_phrase(rng, 6)}. {_para(rng, _scaled(rng, 90))}"


def _gen_if(rng, lang, turn):
    n = _ri(rng, 2, 6)
    w = _ch(rng, _IDENT_WORDS)
    user = (f"Write a {_ch(rng, ('blog post', 'poem', 'letter', 'story', 'speech', 'product description', 'essay'))} about {_phrase(rng, 4)}. "
            f"{_para(rng, _scaled(rng, 40))} Your response should contain {n} paragraphs separated by the markdown divider: ***. "
            f"In your response, the word {w} should appear at least 3 times. End your response with the exact phrase 'Is there anything else I can help with?'")
    paras = [_para(rng, _scaled(rng, 60)) + f" {w.capitalize()} {_phrase(rng, 6)}." for _ in range(n)]
    return user, "\n\n***\n\n".join(paras) + "\n\nIs there anything else I can help with?"


def _gen_sciriff(rng, lang, turn):
    user = (f"You will be shown an abstract from a biomedical research paper. {_para(rng, 40)}\n\n"
            f"Paper title: {_title(rng, 8)}\n\nAbstract:\n{_para(rng, _scaled(rng, 280))}\n\n"
            f"Question: {_para(rng, 14)}\n\nReturn your answer as a JSON object with the keys \"answer\" and \"evidence\".")
    ev = ", ".join(f'"{_para(rng, 14)}"' for _ in range(1 + _rb(rng, 3)))
    return user, f'{{"answer": "{_phrase(rng, 4)}", "evidence": [{ev}]}}'


def _md_table(rng, rows, cols):
    head = [_title(rng, 1 + _rb(rng, 2)) for _ in range(cols)]
    lines = ["|" + "|".join(head) + "|", "|" + "|".join("---" for _ in head) + "|"]
    for _ in range(rows):
        cells = [str(_ri(rng, 0, 9999)) if rng.random() < 0.4 else _phrase(rng, 1 + _rb(rng, 3)) for _ in head]
        lines.append("|" + "|".join(cells) + "|")
    return "\n".join(lines), head


def _gen_table(rng, lang, turn):
    table, head = _md_table(rng, 3 + _rb(rng, 12), 3 + _rb(rng, 5))
    user = (f"Task: {_para(rng, _scaled(rng, 40))}\n\nInput:\nTable A:\n{table}\n\n"
            f"Return the final result as JSON in the format {{\"column_mappings\": \"<a list of column pairs>\"}}.\nOutput:\n")
    pairs = ", ".join(f'["{h}", "{_title(rng, 2)}"]' for h in head)
    return user, f'{{"column_mappings": [{pairs}]}}' if rng.random() < 0.7 else _md_table(rng, 3 + _rb(rng, 8), len(head))[0]


def _gen_general(rng, lang, turn):
    """no_robots / oasst1 style: open-ended requests answered in prose or markdown."""
    user = "" if turn else _lang_para(rng, lang, _scaled(rng, 45))
    if rng.random() < 0.45:
        return user, _lang_para(rng, lang, _scaled(rng, 100))
    return user, _markdown(rng, _scaled(rng, 170), lang, emoji=0.01)


def _gen_hard_coded(rng, lang, turn):
    user = _ch(rng, ("Who are you?", "What is your name?", "Who built you?", "Tell me about yourself.",
                       "Are you ChatGPT?", "What model are you?"))
    return user, ("I am Tülu, a helpful AI assistant built by researchers at the Allen Institute for AI (Ai2). "
                  + _para(rng, _scaled(rng, 40)))


_LANG_MIX = {  # languages and cumulative weights
    "aya": (("hi", "ar", "ja", "ko", "zh", "ru", "es", "fr"), (14, 28, 38, 48, 60, 72, 86, 100)),
    "wildchat": (("en", "zh", "ru", "ja", "ko", "ar", "fr", "es"), (58, 76, 88, 91, 93, 95, 98, 100)),
    "oasst": (("en", "es", "ru", "zh", "fr", "ja", "ko", "ar"), (60, 74, 84, 89, 95, 97, 98, 100)),
}

# name, weight (thousands of Tulu rows), id style, p_system, p_multi, generator, language mix
SOURCES = (
    ("ai2-adapt-dev/personahub_math_v5_regen_149960", 150, "personahub", 0.09, 0.10, _gen_persona_math, None),
    ("ai2-adapt-dev/evol_codealpaca_heval_decontaminated", 107, "num", 0.14, 0.28, _gen_evol, None),
    ("ai2-adapt-dev/tulu_v3.9_aya_100k", 100, "num", 0.12, 0.20, _gen_aya, "aya"),
    ("ai2-adapt-dev/tulu_v3.9_wildchat_100k", 100, "num", 0.24, 0.65, _gen_wildchat, "wildchat"),
    ("ai2-adapt-dev/flan_v2_converted", 90, "num", 0.27, 0.10, _gen_flan, None),
    ("ai2-adapt-dev/numinamath_tir_math_decontaminated", 64, "num", 0.11, 0.12, _gen_numina, None),
    ("ai2-adapt-dev/tulu_v3.9_wildjailbreak_decontaminated_50k", 50, "num", 0.20, 0.20, _gen_refusal, None),
    ("ai2-adapt-dev/tulu_v3.9_synthetic_finalresp_wildguardmixtrain_decontaminated_50k", 50, "num", 0.20, 0.20,
     _gen_refusal, None),
    ("allenai/tulu-3-sft-personas-math-grade", 50, "personas_math_easy", 0.08, 0.10, _gen_gsm, None),
    ("ai2-adapt-dev/tulu_v3.9_open_math_2_gsm8k_50k", 50, "num", 0.08, 0.10, _gen_openmath, None),
    ("ai2-adapt-dev/personahub_code_v2_34999", 25, "personahub", 0.12, 0.20, _gen_persona_code, None),
    ("allenai/tulu-3-sft-personas-code", 10, "personas_code", 0.12, 0.20, _gen_persona_code, None),
    ("ai2-adapt-dev/personahub_ifdata_manual_seed_v3_29980", 30, "personahub", 0.14, 0.15, _gen_if, None),
    ("ai2-adapt-dev/tulu_v3.9_personahub_math_interm_algebra_20k", 20, "personahub", 0.10, 0.10, _gen_algebra, None),
    ("ai2-adapt-dev/coconot_converted", 11, "num", 0.20, 0.15, _gen_coconot, None),
    ("ai2-adapt-dev/tulu_v3.9_sciriff_10k", 10, "num", 0.30, 0.05, _gen_sciriff, None),
    ("ai2-adapt-dev/no_robots_converted", 9.5, "num", 0.35, 0.30, _gen_general, None),
    ("ai2-adapt-dev/oasst1_converted", 7.1, "oasst1", 0.10, 0.55, _gen_general, "oasst"),
    ("ai2-adapt-dev/tulu_v3.9_table_gpt_5k", 5, "num", 0.15, 0.05, _gen_table, None),
    ("ai2-adapt-dev/tulu_hard_coded_repeated_10", 0.24, "hard_coded", 0.30, 0.0, _gen_hard_coded, None),
)
_SOURCE_CUM = []
_acc = 0.0
for _src in SOURCES:
    _acc += _src[1]
    _SOURCE_CUM.append(_acc)
del _acc, _src

_B36 = "0123456789abcdefghijklmnopqrstuvwxyz"
_SYSTEM_FIXED = (
    "You are a helpful assistant.",
    "You are a helpful, respectful and honest assistant.",
    "You are an AI assistant. User will give you a task. Your goal is to complete the task as faithfully as you "
    "can. While performing the task think step-by-step and justify your steps.",
    "You are an AI assistant that helps people find information.",
    "You are a helpful assistant, who always provide explanation. Think like you are answering to a five year old.",
    "You are a senior software engineer. Answer with concise, correct code and explain the key decisions.",
    "你是一个乐于助人的助手。请用中文回答。",
    "Ты — полезный ассистент. Отвечай на русском языке.",
)


def _system(rng: random.Random, lang: str) -> str:
    r = rng.random()
    if r < 0.45:
        return _ch(rng, _SYSTEM_FIXED)
    if r < 0.8:
        return f"You are {_persona(rng, start=False)}. " + _lang_para(rng, lang, _scaled(rng, 35))
    rules = "\n".join(f"- {_para(rng, 6 + _rb(rng, 14))}" for _ in range(2 + _rb(rng, 6)))
    return f"You are {_ch(rng, _PEOPLE)}, {_phrase(rng, 6)}.\n\n# Rules\n{rules}\n\n{_para(rng, _scaled(rng, 40))}"


def _follow_up(rng: random.Random, lang: str) -> str:
    if lang != "en":
        return _lang_para(rng, lang, _scaled(rng, 20))
    r = rng.random()
    if r < 0.25:
        return _ch(rng, ("Can you explain that in more detail?", "Thanks! Can you make it shorter?",
                           "What about the second part?", "Can you give me an example?", "Why?",
                           "Please continue.", "That doesn't work. Can you fix it?", "Translate that into Spanish."))
    if r < 0.4:
        return f"This gives an error:\n\n```\nTraceback (most recent call last):\n  File \"main.py\", line {_ri(rng, 3, 300)}, in <module>\n    {_ident(rng, 2)}()\n{_ch(rng, ('TypeError', 'ValueError', 'KeyError', 'IndexError'))}: {_phrase(rng, 6)}\n```\n\n{_para(rng, 10)}"
    return _para(rng, _scaled(rng, 40))


def _oddity(rng: random.Random, messages: list[dict]) -> None:
    kind = _rb(rng, 6)
    last = messages[-1]
    users = [m for m in messages if m["role"] == "user"]
    if kind == 0:
        last["content"] = ""
    elif kind == 1:
        last["content"] = _ch(rng, (" ", "\n", "  \n\n", "\t", "\n\n\n"))
    elif kind == 2:
        u = _ch(rng, users)
        u["content"] += f"\n<|im_start|>assistant\n{_para(rng, 20)}<|im_end|>\n<|im_start|>user\n{_para(rng, 12)}"
    elif kind == 3:
        u = _ch(rng, users)
        u["content"] = f"<think>\n{_para(rng, 30)}\n</think>\n\n" + u["content"]
    elif kind == 4:
        u = _ch(rng, users)
        u["content"] = (f"Complete the conversation:\n<|im_start|>system\n{_para(rng, 10)}<|im_end|>\n<|im_start|>user\n"
                        f"{u['content']}<|im_end|>\n<|im_start|>assistant\n")
    else:
        m = _ch(rng, messages)
        m["content"] = "\n" * (1 + _rb(rng, 3)) + m["content"] + "\n" * (1 + _rb(rng, 2))


def _make_long(rng: random.Random, messages: list[dict]) -> None:
    """Stretch a conversation past 40,000 characters (mostly a long assistant answer)."""
    target = 41_000 + _rb(rng, 45_000)
    if rng.random() < 0.75:
        m = messages[-1]
        parts = [m["content"]]
        size = len(m["content"])
        code = rng.random() < 0.3
        while size < target:
            if code:
                lang, block = _code(rng, 60)
                part = f"### {_title(rng, 3)}\n\n{_para(rng, 40)}\n\n```{lang}\n{block}\n```"
            else:
                part = f"## {_title(rng, 3 + _rb(rng, 4))}\n\n" + _markdown(rng, 900)
            parts.append(part)
            size += len(part) + 2
        m["content"] = "\n\n".join(parts)
    else:
        u = next(m for m in messages if m["role"] == "user")
        doc = []
        size = 0
        while size < target:
            p = _para(rng, 150)
            doc.append(p)
            size += len(p) + 2
        u["content"] = "Here is the document:\n\n" + "\n\n".join(doc) + "\n\n" + u["content"]


def _conversation(seed: int, i: int) -> dict:
    rng = _Rng(f"sftpack-synthetic:{seed}:{i}")
    name, _, id_style, p_system, p_multi, gen, mix = SOURCES[bisect(_SOURCE_CUM, rng.random() * _SOURCE_CUM[-1])]
    lang = "en"
    if mix:
        langs, cum = _LANG_MIX[mix]
        lang = langs[bisect(cum, rng.random() * cum[-1])]
    messages = []
    if rng.random() < p_system:
        messages.append({"role": "system", "content": _system(rng, lang)})
    pairs = 2 + _rb(rng, 5) if rng.random() < p_multi else 1
    for turn in range(pairs):
        user, answer = gen(rng, lang, turn)  # generators skip building a first-turn prompt when turn > 0
        if turn:
            user = _follow_up(rng, lang)
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": answer})
    if rng.random() < 0.005:
        _make_long(rng, messages)
    if rng.random() < 0.003:
        _oddity(rng, messages)
    if id_style == "num":
        ident = f"{name}_{i}"
    elif id_style in ("oasst1", "hard_coded"):
        ident = f"{id_style}_{i}"
    else:
        ident = f"{id_style}_" + "".join(rng.choices(_B36, k=24))
    return {"id": ident, "messages": messages, "source": name}


def synthetic_conversations(n: int, seed: int = 0) -> Iterator[dict]:
    """Yield ``n`` deterministic Tulu-3-shaped conversations; row ``i`` depends only on ``(seed, i)``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    for i in range(n):
        yield _conversation(seed, i)


# --------------------------------------------------------------------------------------------------------
# Writers.


def _batch(rows: list[dict]) -> pa.RecordBatch:
    ids, sources, contents, roles, offsets = [], [], [], [], [0]
    for row in rows:
        ids.append(row["id"])
        sources.append(row["source"])
        for m in row["messages"]:
            contents.append(m["content"])
            roles.append(m["role"])
        offsets.append(len(contents))
    struct = pa.StructArray.from_arrays(
        [pa.array(contents, pa.string()), pa.array(roles, pa.string())], fields=list(SCHEMA.field("messages").type.value_type)
    )
    messages = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct, type=SCHEMA.field("messages").type)
    return pa.RecordBatch.from_arrays([pa.array(ids, pa.string()), messages, pa.array(sources, pa.string())], schema=SCHEMA)


def synthetic_batches(n: int, seed: int = 0, batch_size: int = 4096) -> Iterator[pa.RecordBatch]:
    """The conversations of :func:`synthetic_conversations` as Arrow record batches of ``batch_size`` rows."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    rows: list[dict] = []
    for row in synthetic_conversations(n, seed):
        rows.append(row)
        if len(rows) == batch_size:
            yield _batch(rows)
            rows = []
    if rows:
        yield _batch(rows)


# Fixed writer settings: the same call gives byte-identical files (for a given pyarrow version).
PARQUET_OPTIONS = dict(
    version="2.6",
    compression="zstd",
    compression_level=3,
    # Dictionary encoding and min/max statistics only where they pay: low-cardinality columns and ids (the
    # statistics of a free-text column would copy whole messages into the footer).
    use_dictionary=["source", "messages.list.element.role"],
    write_statistics=["id", "source", "messages.list.element.role"],
    data_page_version="1.0",
    data_page_size=1 << 20,
    write_batch_size=1024,
    dictionary_pagesize_limit=1 << 20,
    use_compliant_nested_type=True,
    store_schema=True,
    write_page_index=False,
    write_page_checksum=False,
)


def write_synthetic_parquet(path, n: int, seed: int = 0, row_group_size: int = 4096) -> None:
    """Write ``n`` synthetic conversations to a Parquet file, one row group per ``row_group_size`` rows.

    Streams one row group at a time (memory stays bounded for millions of rows) with the fixed settings of
    ``PARQUET_OPTIONS`` (zstd level 3, no timestamps), so the same call gives byte-identical files with the same
    pyarrow version. The file appears under ``path`` only once complete.
    """
    import pyarrow.parquet as pq

    if row_group_size < 1:
        raise ValueError(f"row_group_size must be >= 1, got {row_group_size}")
    tmp = f"{os.fspath(path)}.tmp"
    try:
        with pq.ParquetWriter(tmp, SCHEMA, **PARQUET_OPTIONS) as writer:
            for batch in synthetic_batches(n, seed, row_group_size):
                writer.write_table(pa.Table.from_batches([batch]), row_group_size=row_group_size)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_synthetic_arrow(path, n: int, seed: int = 0, batch_size: int = 4096) -> None:
    """Write ``n`` synthetic conversations to an uncompressed Arrow IPC file (memory-mappable with
    ``pa.memory_map``), streaming one record batch of ``batch_size`` rows at a time."""
    tmp = f"{os.fspath(path)}.tmp"
    try:
        with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, SCHEMA) as writer:
            for batch in synthetic_batches(n, seed, batch_size):
                writer.write_batch(batch)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
