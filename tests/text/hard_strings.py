"""Strings that break BERT tokenizers, for parity and robustness tests."""

import random

# Each documents one way tokenizers disagree.
HAND_PICKED = [
    "",
    " ",
    "\t\n\r ",
    "\u00a0",
    "no\u00a0break\u00a0spaces",
    "ideographic\u3000space",
    "thin\u2009and\u202fnarrow\u205fspaces",
    "line\u2028and\u2029paragraph separators",
    "zero\u200bwidth\u200cnon\u200djoiner",
    "word\u2060joiner\ufeffbom",
    "soft\u00adhyphen",
    "ctrl\x00nul\x01soh\x07bel\x1bescape\x7fdel\x85nel",
    "form\x0cfeed\x0bvertical tab",
    "replacement \ufffd char",
    "private \ue000\uf8ff\U000f0000 use",
    "unassigned \u0378 and noncharacter \uffff",
    "variation selector \u2764\ufe0f and \U000e0100",
    "mongolian\u180evowel separator",
    "direction \u202emarks\u202c \u200e\u200f",
    "Café naïve résumé coöperate façade",
    "e\u0301 combining acute vs \u00e9 precomposed",
    "a\u0316\u0301 out-of-order marks",
    "ÀÁÂÃÄÅ ÆÇ ÈÉÊË ÌÍÎÏ ÐÑ ÒÓÔÕÖ ØÙÚÛÜ ÝÞß",
    "İstanbul IĞDIR ığdır",
    "ΟΔΟΣ οδος Σίσυφος ΣΊΣΥΦΟΣ",
    "Straße STRASSE ẞ",
    "ﬁne ﬂow ﬀ ﬃ",
    "ＦＵＬＬＷＩＤＴＨ ｆｕｌｌ １２３",
    "Ⅻ ⅻ ² ³ ½ ™ ℌ ℃ Å K",
    "日本語のテキストと中文混合",
    "中文，标点。“引号”",
    "한국어 텍스트 ㄱㄴㄷ ᄀᄁ",
    "ひらがな カタカナ ｶﾀｶﾅ",
    "𠀀𠀁 𪜀 CJK extension B and C",
    "مرحبا بالعالم ١٢٣",
    "नमस्ते दुनिया क्षत्रिय",
    "สวัสดีชาวโลก",
    "ሰላም ዓለም",
    "Привет, мир! ЁЛКА ёлка",
    "Γειά σου Κόσμε",
    "שלום עולם",
    "emoji 😀👍🏽👩‍👩‍👧‍👦🏳️‍🌈🇫🇷",
    "keycap 1️⃣ #️⃣",
    "x" * 99,
    "x" * 100,
    "x" * 101,
    "é" * 100,
    "é" * 101,
    "日" * 150,
    "a" * 60 + "é" * 60,
    "supercalifragilisticexpialidocious" * 4,
    "!!!!!!!!!!????????........,,,,,,;;;;;;",
    "--==**&&^^%%$$##@@~~``||\\\\//<<>>{{}}[[]]",
    "…‥‧—–‐‒―「」『』【】〈〉《》",
    "¡¿«»‹›„“”‘’‚",
    "1,000,000.50 1.000.000,50 1 000 000 1'000'000 1\u202f000",
    "3.14159 -42 +7 1e-10 0x1F 1/2 50% $5 €10 £3 ¥100 ₹9",
    "2024-01-31T12:34:56Z 12:30pm",
    "user@example.com https://example.com/a?b=c&d=e#f",
    "C:\\Windows\\path and /usr/bin/env",
    "snake_case camelCase kebab-case SCREAMING_CASE",
    "don't can't won't y'all rock'n'roll",
    "[CLS] [SEP] [PAD] [UNK] [MASK]",
    "[MASK][MASK] [[MASK]] [mask] [MASK ] [ MASK] [MAS\u200bK]",
    "a[SEP]b[CLS]c",
    "#hashtag @mention ##piece ###",
    "\U0010ff00\U0010ff01 sentinel range",
    "tab\tseparated\tvalues",
    "new\nline\r\nwindows",
    "   leading and trailing   ",
]

# Pools for generated strings: each a class of character the tokenizer must
# treat specially.
POOLS = {
    "ascii": "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
    "punctuation": "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~¡§¶·¿‐–—‘’“”…‽⁂、。・",
    "spaces": " \t\n\r\u00a0\u1680\u2000\u2005\u200a\u2028\u202f\u3000",
    "invisible": "\x00\x01\x1f\x7f\x85\u00ad\u200b\u200c\u200d\u2060\ufeff"
    "\ufffd\ue000\u061c\U000e0001",
    "accents": "àáâãäåçèéêëìíîïñòóôõöùúûüýÿāăąćĉčďēĕėęěǎǐǒǔǖ"
    "\u0300\u0301\u0302\u0308\u0327\u0345\u0591\u064b",
    "cased": "ÀÉÎÕÜİIıΣσςÆØẞßǅǈΩΆЁЖ",
    "cjk": "日本語中文字漢字𠀀丁亀豈",
    "kana_hangul": "ひらがなカタカナｶﾀ한국어텍스트ㄱ",
    "scripts": "مرحبانमस्तेสวัสดีሰላምשלוםПриветΓειά",
    "emoji": "😀👍🏽👩‍👧🏳️‍🌈🇫🇷❤️✨🤖",
    "symbols": "©®™°±×÷€£¥₹∑∞√≈≠≤≥←→↑↓★☆♠♣",
    "special": ["[MASK]", "[CLS]", "[SEP]", "[UNK]", "[PAD]", "[mask]"],
}


def generated(count=400, seed=1234):
    """`count` random strings mixing the pools, some with long words."""
    rng = random.Random(seed)
    names = sorted(POOLS)
    strings = []
    for _ in range(count):
        chosen = rng.sample(names, rng.randint(1, 4))
        pieces = []
        for _ in range(rng.randint(0, 40)):
            pool = POOLS[rng.choice(chosen)]
            pieces.append(rng.choice(pool))
            if rng.random() < 0.15:
                pieces.append(" ")
        text = "".join(pieces)
        if rng.random() < 0.1:
            text += " " + rng.choice("abcé日") * rng.randint(95, 105)
        strings.append(text)
    return strings


def all_hard_strings():
    return HAND_PICKED + generated()
