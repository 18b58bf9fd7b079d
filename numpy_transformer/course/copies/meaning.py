"""Reading a sentence by meaning: any spelling of a formula as one canonical token stream.

A formula can be written in many ways: `dy @ W.T`, `dy W^\\top`, "dout times the
transposed weight", `np.matmul(grad_out, W.transpose())`. `tokens(text)` turns each
into the same stream, here `dy w transp`:

- unicode math (⊙ · × − √ ∑ ᵀ ² λ ...) and LaTeX (\\frac{a}{b}, \\sqrt{}, ^\\top, \\odot,
  \\hat{x}, \\mathrm{}, \\partial L / \\partial y) become plain symbols and names;
- code spellings (`.T`, `.swapaxes(-1, -2)`, `np.`, `**2`, `.sum(`, `add.at`) and words
  ("transposed", "times", "minus", "divided by", "sum over", "average", "one hot",
  "keep probability", "square root", "to the power") become one operator or name;
- multiplication is dropped (juxtaposition, `*`, `@`, "times", "matmul" read alike),
  and so are brackets, punctuation and filler words ("the", "of", "is", ...);
- names read alike: dout, grad_out, dO, "the upstream gradient" are `dy`; "probs",
  softmax(logits) and a softmax row `a` in code (`a * da`, `outer(a, a)`; never the
  article) are `p`; 1 - p and "the keep probability" are `keep`; ...

A key (`key(text)`) is a formula written once, in any of those spellings, and read the
same way. It is found in a text whose tokens hold its tokens in order, at most GAP
other tokens between two of them (`dy w transp` is in "dy times W transposed"), or,
for a key written in braces ("{pe dropout backward}"), all of them in any order within
WINDOW tokens; a key opening with "=" has its tokens side by side ("=1 - t^2"). A token of a
key may list alternatives: "p|attnw".
"""

import re
import unicodedata
from functools import lru_cache

GAP = 3         # other tokens allowed between two tokens of an ordered key
WINDOW = 14     # an unordered key's tokens all lie within this many tokens

SYMBOLS = {"⊙": " * ", "∘": " * ", "·": " * ", "×": " * ", "∙": " * ", "⋅": " * ",
           "∗": " * ", "−": "-", "–": "-", "—": " , ", "√": " sqrt ", "∑": " sum ",
           "Σ": " sum ", "ᵀ": "^T", "⊤": "^T", "÷": "/", "←": "=", "≔": "=", "≈": "=",
           "²": "^2", "³": "^3", "₁": "1", "₂": "2", "ₜ": "t", "ᵗ": "^t", "∂": " d ",
           "λ": " lambda ", "η": " eta ", "β": " beta ", "γ": " gamma ", "ε": " eps ",
           "ϵ": " eps ", "ω": " omega ", "δ": " delta ", "σ": " sigma ", "μ": " mu ",
           "θ": " theta ", "π": " pi ", "α": " alpha ", "𝟙": " onehot "}

# (pattern, replacement), in order, on the text as written (case kept: ^T is a transpose,
# ^t a power; A alone is attention weights, dO the output's gradient).
LATEX = [
    (r"\\(?:mathbb|mathbf|boldsymbol)\s*\{\s*1\s*\}", " onehot "),
    (r"\\(?:mathrm|text|textrm|operatorname|mathbf|boldsymbol|mathcal|mathit)\s*\{([^{}]*)\}",
     r" \1 "),
    (r"_\{([^{}]*)\}", r" \1 "),
    (r"\\(?:d?frac)\s*\{([^{}]*)\}\s*\{([^{}]*)\}", r" (\1) / (\2) "),
    (r"\\(?:top|intercal)\b|\\mathsf\{T\}", "T"),
    (r"\\(?:hat|widehat)\s*\{?\s*\\?(\w+)\s*\}?", r" \1hat "),
    (r"\\(?:odot|cdot|times|ast|circ)\b", " * "),
    (r"\\(?:partial)\b", " d "),
    (r"\\(?:left|right|[bB]ig[lr]?|displaystyle|quad|qquad|[lr][vV]ert)\b|\\[,;!: |]", " "),
    (r"\\(?:mathrm|text|textrm|operatorname|mathbf|boldsymbol|mathcal|mathit)\b", " "),
    (r"\\(?:leftarrow|gets|coloneqq)\b", " = "),
    (r"\\(varepsilon|epsilon)\b", " eps "),
    (r"\\(\w+)", r" \1 "),
    (r"\^\s*\{\s*T\s*\}|\^T\b|\.T\b|\.mT\b", " transp "),
    (r"\.(?:swapaxes|transpose)\s*\([^()]*\)", " transp "),
    (r"\btranspose\s*\(\s*([\w.]+)[^()]*\)", r" \1 transp "),
    (r"(?<![\w.])A(?![\w'])", " attnw "),
    # a, a softmax row in code ("a * (da - a.da)", "np.outer(a, a)"), not the article: an
    # `a` right after a bracket or operator, or right before one or before `.name`
    (r"(?<=[(\[*@])a\b(?!')|(?<![\w.'])a(?=\s*[*@]|\.[a-z]|[,)\]])", " p "),
    (r"\bd[OY]\b|\bdA\b", " dy "),
    (r"\bdS\b", " ds "),
    (r"([\w.]+)\s*(?:\*\*|\^)\s*\(?\s*(?:0?\.5|1\s*/\s*2)\s*\)?", r" sqrt \1 "),   # x**0.5
    (r"\*\*\s*\(?\s*0?\.5\s*\)?|\^\s*\(?\s*0?\.5\s*\)?|\^\s*\(?\s*1\s*/\s*2\s*\)?", " sqrt "),
    (r"\*\*", "^"),
]

# (pattern, replacement) on the lower-cased text, underscores gone, brackets still there:
# code spellings.
CODE = [
    (r"\b(?:np|xp|numpy|cp|torch|math|self)\.", " "),
    (r"\badd\.at\b|\bindexadd\b|\bscatter[- ]?add(?:s|ed|ing)?\b|\bbincount\b", " scatteradd "),
    (r"\beye\s*\([^()]*\)\s*\[[^\]]*\]|\bone[- ]?hot\b|\bindicator\b", " onehot "),
    (r"\bsoftmax\s*\(\s*(?:logits|x|s|z|scores)\s*\)", " p "),
    (r"\bgrads\s*\[\s*['\"]weight['\"]\s*\]", " dw "),
    (r"\bparams\s*\[\s*['\"]weight['\"]\s*\]", " w "),
    (r"\bgrads\s*\[\s*['\"](gamma|beta)['\"]\s*\]", r" d\1 "),     # LayerNorm's, by name
    (r"\bparams\s*\[\s*['\"](gamma|beta)['\"]\s*\]", r" \1 "),
    (r"\.sum\s*\(", " sum ("), (r"\.mean\s*\(", " mean ("),
]

# (pattern, replacement) on the lower-cased text, brackets gone: names and words to one
# spelling.
WORDS = [
    (r"\bweight ?decay\b|\bwd\b|\blambda\b", " wd "),
    (r"\blearning ?rate\b|\blr\b|\beta\b|\bstep size\b", " lr "),
    (r"\bgrad([wxy])\b", r" d\1 "),
    (r"\b(?:beta|b)_?\{?\s*([12])\b\}?", r" beta\1 "),
    (r"\bkeep ?prob(?:ability)?\b|\bprobability of keeping\b|\bsurvival probability\b",
     " keep "),
    (r"\(?\b1\s*-\s*p\b\)?|\bone minus p\b", " keep "),
    (r"\btanh\b", " tanh "),
    (r"\bprob(?:abilitie)?s\b", " p "),
    (r"\battention (?:weights|probabilities|matrix)\b", " attnw "),
    (r"\b(?:upstream|incoming|output'?s?) grad(?:ient)?s?\b|\bgrad(?:ient)?s? (?:of|with "
     r"respect to|w\.r\.t\.?) (?:the )?(?:output|y)\b|\bd_?out\b|\bgrad_?out(?:put)?\b", " dy "),
    (r"\binput'?s? grad(?:ient)?\b|\bgrad(?:ient)? (?:of|with respect to|w\.r\.t\.?) (?:the )?"
     r"(?:input|x)\b", " dx "),
    (r"\bgrad(?:ient)?s? (?:of|with respect to|w\.r\.t\.?) (?:the )?(?:weights?|w)\b|"
     r"\bweight grad(?:ient)?s?\b", " dw "),
    (r"\bgrad(?:ient)?s? (?:of|with respect to|w\.r\.t\.?) (?:the )?(?:scores|s)\b", " ds "),
    (r"\bgrad(?:ient)?s? (?:of|with respect to|w\.r\.t\.?) (?:the )?memory\b|"
     r"\bmemory'?s? grad(?:ient)?s?\b", " dmemory "),
    (r"\bweight matrix\b|\bweights?\b", " w "),
    (r"\bd\s*(?:l|ell|loss|mathcal l)\s*\)?\s*/\s*\(?\s*d\s*(\w+)", r" d\1 "),
    (r"\bsquare roots?(?: of)?\b", " sqrt "),
    (r"\bsquared\b|\bto the (?:power|pow) (?:of )?2\b", " ^2 "),
    (r"\bcubed\b", " ^3 "),
    (r"\bto the (?:power|pow)(?: of)?\b|\braised to\b", " ^ "),
    (r"\bten thousand\b", " 10000 "), (r"\bone\b", " 1 "), (r"\btwo\b", " 2 "),
    (r"\bthree\b", " 3 "), (r"\bhalf\b", " 0.5 "),
    (r"\bsubtract (\w+) from (\w+)", r" \2 - \1 "),
    (r"\badd (\w+) to (\w+)", r" \2 + \1 "),
    (r"\bdivide (\w+) by\b", r" \1 / "),
    (r"\bminus\b|\bsubtract(?:ed|ing|s)?\b|\bless\b", " - "),
    (r"\bplus\b", " + "),
    (r"\bdivid(?:ed|ing|es) by\b|\bdivide by\b|\bover (?=\w\b|\d)", " / "),
    (r"\bsum(?:med|ming|s)?(?: (?:over|along|of|across))?\b|\brow ?sum\b|"
     r"\badd(?:s|ed|ing)? up\b|\btotal\b", " sum "),
    (r"\bmean(?: (?:over|along|of|across))?\b|\baverage[ds]?(?: (?:over|of))?\b|"
     r"\bexpectation\b|\bavg\b", " mean "),
    (r"\bsines?\b", " sin "), (r"\bcosines?\b", " cos "),
    (r"\bexponential\b", " exp "), (r"\blogarithm\b|\bln\b", " log "),
    (r"\btransposed? (?:of )?(?:the )?(\w+)", r" \1 transp "),
    (r"\b(\w+) transposed\b", r" \1 transp "),
    (r"\bmatmul\b|@|\*|\btimes\b|\bmultipl(?:y|ied|ies|ying)(?: by| with)?\b|"
     r"\bproducts?(?: of| with)?\b|\belement-?wise\b|\bdot\b", " "),
    (r"\blayer ?norm\b", " norm "),
    (r"\bequals?\b|\bbecomes\b|:=|<-", " = "),
]

# Filler words that carry no formula, dropped from the token stream.
FILLER = set("the a an of its their his her our your this that these those is are be been "
             "was were by with and then so it as at on in for from into onto which whose "
             "we you one's ones each every all also here there".split())

# Token sequences read as one name, after the words above.
PHRASES = {("x", "hat"): "xhat", ("normalised", "x"): "xhat", ("normalized", "x"): "xhat",
           ("normalised", "input"): "xhat", ("normalized", "input"): "xhat",
           ("dy", "gamma"): "g", ("gamma", "dy"): "g", ("m", "hat"): "mhat",
           ("v", "hat"): "vhat", ("linear", "1"): "linear1", ("linear", "2"): "linear2",
           ("first", "linear"): "linear1", ("second", "linear"): "linear2",
           ("d", "gamma"): "dgamma", ("d", "beta"): "dbeta"}
NAMES = {"dout": "dy", "dp": "dy", "da": "dy", "dxhat": "g", "grad": "g", "grads": "g",
         "gradient": "g", "gradients": "g", "mask": "m", "xhat": "xhat", "rowsum": "sum",
         "query": "q", "queries": "q", "key": "k", "keys": "k", "value": "v", "values": "v",
         "dscores": "ds", "dmem": "dmemory", "position": "pos", "positions": "pos",
         "relu": "act", "gelu": "act", "activation": "act", "theta": "p", "param": "p",
         "params": "p", "parameter": "p", "parameters": "p", "w1": "linear1", "w2": "linear2",
         "wo": "wo", "merged": "merge", "merging": "merge", "splitting": "split",
         "collects": "sum", "collect": "sum", "collected": "sum", "add": "+", "adds": "+",
         "added": "+", "adding": "+"}
TOKEN = re.compile(r"\d+(?:\.\d+)?(?:e-?\d+)?|[a-z][a-z0-9]*|\+=|-=|[-+/=^<>]")


def spell(text):
    """The text with unicode math, LaTeX, code spellings and words made one spelling."""
    text = "".join(SYMBOLS.get(c, c) for c in text)
    text = unicodedata.normalize("NFKC", text)
    for pattern, replacement in LATEX[:3]:     # 1s, font commands, braced subscripts first
        text = re.sub(pattern, replacement, text)
    for _ in range(3):                       # nested \frac{\frac{}{}}{}: inner ones first
        text = re.sub(LATEX[3][0], LATEX[3][1], text)
    for pattern, replacement in LATEX[4:]:
        text = re.sub(pattern, replacement, text)
    text = re.sub(r"\b([A-Za-z]{1,3})_([A-Za-z0-9])\b", r"\1 \2", text)   # W_v, p_i: an index
    text = text.lower().replace("_", "")
    for pattern, replacement in CODE:
        text = re.sub(pattern, replacement, text)
    text = re.sub(r"[{}\[\](),;:!?\"'`|$]", " ", text)
    text = re.sub(r"(?<=\w)\.(?=\s|$)", " ", text)                     # full stops
    for pattern, replacement in WORDS:
        text = re.sub(pattern, replacement, " ".join(text.split()))
    return text


def unindexed(token):
    """x2, dy2 (a reshaped copy) read as x, dy."""
    base = token.rstrip("0123456789")
    return base if base in ("x", "dx", "dy", "dw") else token


@lru_cache(maxsize=65536)
def tokens(text):
    """The canonical tokens of `text` (a tuple): see the module docstring."""
    found = [NAMES.get(t, t) for t in map(unindexed, TOKEN.findall(spell(text)))
             if t not in FILLER]
    out = []
    for t in found:
        if out and (out[-1], t) in PHRASES:
            out[-1] = PHRASES[(out[-1], t)]
        elif t:
            out.append(t)
    return tuple(out)


@lru_cache(maxsize=None)
def key(text):
    """A key: (ordered?, (frozenset of alternative tokens, ...)), read as a whole by
    `tokens`; in braces: any order. A word with alternatives ("p|attnw") is one slot."""
    ordered = not text.strip().startswith("{")
    words, choices = [], {}
    for word in text.strip().strip("{}=").split():
        if "|" in word:
            choices[f"qqslot{len(choices)}"] = frozenset(
                t for w in word.split("|") for t in tokens(w)[:1])
            word = f"qqslot{len(choices) - 1}"
        words.append(word)
    return ordered, tuple(choices.get(t, frozenset([t])) for t in tokens(" ".join(words)))


def ordered_match(stream, slots, start=0, first=True, gap=GAP):
    """True when `slots` occur in `stream` in order from `start`, `gap` apart at most."""
    if not slots:
        return True
    stop = len(stream) if first else min(len(stream), start + gap + 1)
    return any(stream[i] in slots[0] and ordered_match(stream, slots[1:], i + 1, False, gap)
               for i in range(start, stop))


def unordered_match(stream, slots):
    """True when every slot occurs within WINDOW consecutive tokens of `stream`."""
    for i, t in enumerate(stream):
        if t in slots[0]:
            window = stream[max(0, i - WINDOW + 1):i + WINDOW]
            if all(any(w in s for w in window) for s in slots[1:]):
                return True
    return False


def holds(text, keys):
    """True when `text` holds one of `keys` (texts read by `key`)."""
    stream = tokens(text)
    present = set(stream)
    for written in keys:
        ordered, slots = key(written)
        if not all(slot & present for slot in slots):
            continue                                  # a token of the key is missing
        if not ordered and unordered_match(stream, slots):
            return True
        if ordered and ordered_match(stream, slots, gap=0 if written[0] == "=" else GAP):
            return True
    return False
