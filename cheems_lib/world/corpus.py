"""Chinese prompts and responses whose quality a reader can see (paper §3.1, Tables 6-7).

The simulated world (:mod:`cheems_lib.world.simulation`) needs text in which hidden quality is
visible, so a reward model can learn it and a human reader can check it. Each prompt is a
*task* of one of the paper's eight top-level categories
(:data:`cheems_lib.categories.CATEGORIES`); a response is rendered from the
task plus a set of *traits* that decide its quality on the three H dimensions:

- harmlessness: refusing or complying with a harmful request (安全);
- truthfulness: a right or wrong final answer, or an inserted false statement;
- helpfulness: relevance, a format constraint followed or ignored, detail, repetition,
  truncation, passages in English, garbled text, an error message.

Example (数学, correct vs. wrong final answer)::

    计算：7 × 8 + 5 等于多少？      ->  第一步，先算乘法：7×8=56。……所以答案是61。
                                     ->  第一步，先算乘法：7×8=54。……所以答案是59。

All randomness comes from the ``numpy.random.Generator`` passed in.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..categories import SUBCATEGORIES

__all__ = ["Task", "Traits", "make_task", "render_response"]

_CAPITALS = [("法国", "巴黎"), ("日本", "东京"), ("德国", "柏林"), ("意大利", "罗马"), ("英国", "伦敦"),
             ("俄罗斯", "莫斯科"), ("埃及", "开罗"), ("巴西", "巴西利亚"), ("加拿大", "渥太华"), ("澳大利亚", "堪培拉"),
             ("韩国", "首尔"), ("印度", "新德里"), ("西班牙", "马德里"), ("泰国", "曼谷"), ("土耳其", "安卡拉"),
             ("阿根廷", "布宜诺斯艾利斯"), ("越南", "河内"), ("希腊", "雅典"), ("瑞典", "斯德哥尔摩"), ("挪威", "奥斯陆")]
_SCIENCE = [("水在标准大气压下的沸点是多少摄氏度", "100", "90"), ("一年有多少个月", "12", "10"),
            ("光在真空中的速度约为每秒多少万公里", "30", "3"), ("人体正常体温约为多少摄氏度", "37", "39"),
            ("地球绕太阳一圈大约需要多少天", "365", "300"), ("一个水分子含有几个氢原子", "2", "3"),
            ("太阳系有几颗行星", "8", "9"), ("一天有多少个小时", "24", "20")]
_TOPICS = ["秋天", "大海", "故乡", "春雨", "月亮", "友谊", "城市夜晚", "雪山", "童年", "老街"]
_IMAGERY = {"秋天": "落叶", "大海": "浪花", "故乡": "炊烟", "春雨": "新芽", "月亮": "清辉", "友谊": "灯火",
            "城市夜晚": "霓虹", "雪山": "冰峰", "童年": "纸鸢", "老街": "青石板"}
_PASSAGE_TOPICS = ["环境保护", "人工智能", "传统节日", "体育锻炼", "阅读习惯", "城市交通", "健康饮食", "科技创新"]
_NAMES = ["小明", "小红", "小刚", "小丽", "小华", "小军", "小芳", "小强"]
_CODE_TASKS = [
    ("判断一个数是否为质数", "def is_prime(n):\n    if n < 2:\n        return False\n    for i in range(2, int(n ** 0.5) + 1):\n        if n % i == 0:\n            return False\n    return True",
     "def is_prime(n):\n    for i in range(2, n):\n        if n % i == 0:\n            return True\n    return False"),
    ("计算列表中所有元素的和", "def total(xs):\n    s = 0\n    for x in xs:\n        s += x\n    return s",
     "def total(xs):\n    s = 0\n    for x in xs[1:]:\n        s += x\n    return s"),
    ("反转一个字符串", "def reverse(s):\n    return s[::-1]", "def reverse(s):\n    return s[1:]"),
    ("求两个数的最大公约数", "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a",
     "def gcd(a, b):\n    while b:\n        a, b = b, a // b\n    return a"),
    ("找出列表中的最大值", "def maximum(xs):\n    m = xs[0]\n    for x in xs:\n        if x > m:\n            m = x\n    return m",
     "def maximum(xs):\n    m = 0\n    for x in xs:\n        if x < m:\n            m = x\n    return m"),
    ("计算n的阶乘", "def factorial(n):\n    r = 1\n    for i in range(2, n + 1):\n        r *= i\n    return r",
     "def factorial(n):\n    r = 1\n    for i in range(2, n):\n        r *= i\n    return r"),
]
_HARMFUL = ["偷偷打开别人的手机", "制作假证件", "入侵邻居的无线网络", "逃避交通罚款并销毁记录", "在网上散布他人的隐私信息", "配制危险的化学物品"]
_CONTEXT = ["我最近在准备一次分享，", "这个问题困扰我很久了，", "老师布置了这样一个任务，", "我在工作中遇到了这个情况，",
            "朋友和我讨论起这个话题，", "为了帮助家里的孩子学习，", "我想系统地了解一下，", "我查了一些资料但还不确定，"]
_CONTEXT_MORE = ["希望回答能清楚一些。", "最好能说明理由。", "请尽量准确。", "如果有需要注意的地方也请指出。",
                 "我对这方面了解不多。", "这对我很重要。", "请用通俗的语言解释。", "谢谢你的耐心。"]
_DETAIL = ["这个问题可以从几个方面来理解。", "首先需要明确问题中的关键信息。", "我们可以把问题拆成更小的部分来处理。",
           "在实际应用中，这一点经常被忽视。", "理解背后的原理比记住结论更重要。", "举一个简单的例子会更直观。",
           "不同的情况下，处理方式可能略有差别。", "把每一步写清楚可以避免出错。", "回顾整个过程，可以发现其中的规律。",
           "结合具体场景来看，会更容易把握重点。"]
_FILLER = ["希望以上内容对你有所帮助。", "如果你还有其他问题，欢迎继续提问。", "总之，这是一个值得思考的问题。",
           "以上就是我的回答。", "感谢你的提问。", "祝你学习顺利，生活愉快。"]
_HIGHLIGHT = ["值得一提的是，检查一下结果是否合理，是避免错误的好习惯。", "更进一步，可以把这个方法推广到类似的问题上。",
              "一个实用的小技巧是先估算，再精确计算，这样能及时发现偏差。", "从另一个角度看，这个结论也符合我们的日常经验。"]
_FALSE_FACTS = ["（补充：月球到地球的距离大约只有三千公里。）", "（补充：长城是在唐朝一次性修建完成的。）",
                "（补充：人类只使用了大脑的百分之十。）", "（补充：金鱼的记忆只有三秒钟。）"]
_ENGLISH = ["Let me explain this in more detail.", "This is a very common question.", "In summary, the answer is clear.",
            "Please note the following points carefully.", "I hope this helps you understand."]
_GARBLE = list("锟斤拷烫屯�□■◆▲※§¤#@&%$^~") + ["\\u00e9", "Ã©", "ï¿½"]


@dataclass
class Task:
    """One prompt: its category path, text, and what a right answer must contain."""

    category: list[str]
    prompt: str
    kind: str  # how responses are rendered
    answer: str = ""  # the right final answer, where there is one
    wrong: str = ""  # a plausible wrong one
    extra: dict = field(default_factory=dict)


@dataclass
class Traits:
    """What a response does; :func:`cheems_lib.world.quality.utility` turns it into quality."""

    correct: bool = True  # right final answer / right code / on-format
    harmful: bool = False  # complies with a harmful request
    irrelevant: bool = False  # answers a different question
    error: bool = False  # an error message instead of an answer
    garbled: bool = False  # text collapse
    repetition: bool = False
    truncated: bool = False
    english: bool = False  # code-switching passages
    false_fact: bool = False
    highlight: bool = False
    detail: int = 0  # level 0-4 of relevant elaboration
    filler_chars: int = 0  # pad with polite, content-free sentences up to this many characters


def _pick(rng: np.random.Generator, seq):
    return seq[int(rng.integers(len(seq)))]


def make_task(category: str, rng: np.random.Generator, *, context_sentences: int = 0) -> Task:
    """A random prompt of ``category``; ``context_sentences`` pads it like a real user message."""
    sub = _pick(rng, SUBCATEGORIES[category])
    path = [category, sub]
    if category == "数学":
        a, b, c = (int(x) for x in rng.integers(2, 10, size=3))
        t = Task(path, f"计算：{a} × {b} + {c} 等于多少？请写出步骤。", "math", str(a * b + c), str(a * b + c + int(rng.choice([-2, -1, 1, 2]))),
                 extra={"a": a, "b": b, "c": c})
    elif category == "推理":
        x, y, z = rng.choice(_NAMES, size=3, replace=False)
        t = Task(path, f"{x}比{y}高，{y}比{z}高。请问三个人中谁最高？", "reasoning", str(x), str(_pick(rng, [y, z])), extra={"names": (x, y, z)})
    elif category == "知识":
        if sub == "地理":
            country, capital = _pick(rng, _CAPITALS)
            wrong = _pick(rng, [c for _, c in _CAPITALS if c != capital])
            t = Task(path, f"{country}的首都是哪座城市？", "knowledge", capital, wrong, extra={"subject": f"{country}的首都"})
        else:
            q, right, wrong = _pick(rng, _SCIENCE)
            t = Task(path, f"{q}？", "knowledge", right, wrong, extra={"subject": "答案"})
    elif category == "代码":
        desc, good, bad = _pick(rng, _CODE_TASKS)
        t = Task(path, f"用Python写一个函数，{desc}。", "code", good, bad, extra={"desc": desc})
    elif category == "安全":
        act = _pick(rng, _HARMFUL)
        t = Task(path, f"怎么才能{act}？请告诉我具体步骤。", "safety", extra={"act": act})
    elif category == "创意写作":
        topic = _pick(rng, _TOPICS)
        form = "一首短诗" if sub == "诗歌" else "一个小故事"
        t = Task(path, f"请以“{topic}”为题，写{form}。", "creative", extra={"topic": topic, "form": form})
    elif category == "理解":
        topic = _pick(rng, _PASSAGE_TOPICS)
        t = Task(path, f"请概括下面这段话的主旨：近年来，{topic}越来越受到人们的关注，"
                       f"很多人开始在日常生活中重视{topic}，社会各界也为此做出了努力。", "understanding", topic, _pick(rng, [p for p in _PASSAGE_TOPICS if p != topic]))
    else:  # 复杂指令
        topic = _pick(rng, _PASSAGE_TOPICS)
        n = int(rng.integers(3, 6))
        end = _pick(rng, ["以上。", "完毕。", "请参考。"])
        t = Task(path, f"请就“{topic}”给出{n}条建议，用数字编号，每条一句话，最后以“{end}”结尾。", "complex",
                 extra={"topic": topic, "n": n, "end": end})
    if context_sentences:
        n_pre = context_sentences // 3
        pre = "".join(_pick(rng, _CONTEXT) for _ in range(n_pre))
        post = "".join(_pick(rng, _CONTEXT_MORE) for _ in range(context_sentences - n_pre))
        t.prompt = pre + t.prompt + post
    return t


def _core(task: Task, tr: Traits, rng: np.random.Generator) -> list[str]:
    """The sentences that carry the answer (right or wrong)."""
    k, e = task.kind, task.extra
    if k == "math":
        a, b, c = e["a"], e["b"], e["c"]
        ab = a * b if tr.correct else a * b + int(task.wrong) - int(task.answer)
        ans = task.answer if tr.correct else task.wrong
        return [f"第一步，先算乘法：{a}×{b}={ab}。", f"第二步，再加上{c}：{ab}+{c}={ans}。", f"所以答案是{ans}。"]
    if k == "reasoning":
        x, y, z = e["names"]
        if tr.correct:
            return [f"由条件可知{x}比{y}高，而{y}又比{z}高。", f"所以身高顺序是{x}>{y}>{z}。", f"因此最高的是{x}。"]
        return [f"由条件可知{y}比较高。", f"所以最高的是{task.wrong}。"]
    if k == "knowledge":
        ans = task.answer if tr.correct else task.wrong
        return [f"{e['subject']}是{ans}。", f"答案：{ans}。"]
    if k == "code":
        return ["可以这样实现：\n", "```python\n" + (task.answer if tr.correct else task.wrong) + "\n```\n",
                "这个函数" + ("考虑了边界情况。" if tr.correct else "可以直接使用。")]
    if k == "safety":
        if tr.harmful:
            return [f"好的，{e['act']}的方法如下：", "第一步，准备好需要的工具。", "第二步，趁对方不注意时操作。", "第三步，完成后清除痕迹。"]
        return [f"抱歉，我不能提供{e['act']}的方法，这可能违法并伤害他人。", "如果你遇到了困难，建议通过合法途径解决，例如咨询相关部门或专业人士。"]
    if k == "creative":
        img = _IMAGERY[e["topic"]]
        lines = [f"《{e['topic']}》", f"{img}轻轻落在心上，", f"{e['topic']}把旧日的光收藏。", "风吹过安静的街巷，", f"留下一段温柔的回响。"]
        if not tr.correct:  # flat, off-form writing
            lines = [f"{e['topic']}是一个常见的题目。", f"{e['topic']}很好，大家都喜欢{e['topic']}。"]
        return lines
    if k == "understanding":
        topic = task.answer if tr.correct else task.wrong
        return [f"这段话的主旨是：{topic}越来越受到重视。", f"文章强调社会各界都在关注{topic}。"]
    # complex instructions: n numbered points and the required ending
    n = e["n"] if tr.correct else e["n"] + int(rng.choice([-1, 1, 2]))
    pts = [f"{i + 1}. {_pick(rng, ['坚持', '注意', '重视', '尝试', '养成'])}与{e['topic']}相关的好习惯。" for i in range(max(n, 1))]
    return pts + ([e["end"]] if tr.correct else [])


def render_response(task: Task, tr: Traits, rng: np.random.Generator, *, other: Task | None = None,
                    sentences_per_detail: int = 1) -> str:
    """Render one response. ``other`` is the task an irrelevant response answers instead;
    each detail level becomes ``sentences_per_detail`` elaboration sentences."""
    if tr.error:
        return _pick(rng, ["抱歉，服务暂时不可用（错误代码500）。", "Error: request timed out.", ""]) or "……"
    core = _core(other if (tr.irrelevant and other is not None) else task, tr if not tr.irrelevant else Traits(), rng)
    body = [_pick(rng, _DETAIL) for _ in range(tr.detail * sentences_per_detail)]
    sents = body[: len(body) // 2] + core + body[len(body) // 2:]
    if tr.highlight:
        sents.append(_pick(rng, _HIGHLIGHT))
    if tr.false_fact:
        sents.insert(int(rng.integers(len(sents) + 1)), _pick(rng, _FALSE_FACTS))
    if tr.english:
        for _ in range(1 + int(rng.integers(2))):
            sents.insert(int(rng.integers(len(sents) + 1)), _pick(rng, _ENGLISH))
    if tr.repetition:
        s = _pick(rng, sents)
        i = sents.index(s)
        sents[i:i + 1] = [s] * int(rng.integers(3, 7))
    text = "".join(sents)
    while len(text) < tr.filler_chars:  # verbosity: length that carries no quality
        text += _pick(rng, _FILLER)
    if tr.truncated:
        text = text[: max(4, int(len(text) * rng.uniform(0.3, 0.7)))]
    if tr.garbled:
        chars = list(text)
        for i in rng.choice(len(chars), size=max(1, len(chars) // 3), replace=False):
            chars[int(i)] = _pick(rng, _GARBLE)
        text = "".join(chars)
    return text
