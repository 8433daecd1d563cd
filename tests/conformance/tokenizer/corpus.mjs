// The strings both tokenizers encode: hand-picked hard cases plus seeded random mixtures of
// prose, code, CJK, emoji, whitespace runs, numbers, special-token look-alikes and unusual
// Unicode. Deterministic: the same corpus on every run.

// U+0085 and U+FEFF are left out of the random text on purpose: JavaScript's \s disagrees with
// the Oniguruma class Hugging Face's Rust library uses (JS counts U+FEFF and not U+0085), so
// the JavaScript reference itself differs from HF there.

const kHandPicked = [
  '',
  ' ',
  'a',
  'Hello world',
  ' Hello world',
  'Hello  world',
  'Hello world ',
  'The quick brown fox jumps over the lazy dog.',
  "It's, we're, they've, I'm, you'll, he'd. IT'S WE'RE THEY'VE I'M YOU'LL HE'D",
  "'s 't 're 've 'm 'll 'd",
  'café résumé naïve coöperate façade',
  'cafe\u0301 re\u0301sume\u0301 nai\u0308ve',  // NFD: combining accents
  'Å Å Å',  // U+00C5, A + ring, U+212B (angstrom sign)
  'ﬁ ﬂ ① ㍿ Ｆｕｌｌｗｉｄｔｈ',  // compatibility characters
  '日本語のテキストです。東京は大きい都市です。',
  '中文文本：你好，世界！这是一个测试。',
  '한국어 텍스트입니다. 안녕하세요!',
  'Ελληνικά και Русский текст и العربية و עברית',
  'हिन्दी पाठ और தமிழ் உரை',
  '🙂🙃😀 👍🏽 👩‍💻 👨‍👩‍👧‍👦 🏳️‍🌈 🇫🇷🇯🇵',
  '👍🏻👍🏼👍🏽👍🏾👍🏿',
  '🧑🏾‍🤝‍🧑🏻',
  'def f(x):\n    return x ** 2  # square\n',
  'for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}\n',
  'const x = {"key": [1, 2, 3], \'y\': null};',
  '<html><body class="main">Hi &amp; bye</body></html>',
  'SELECT * FROM users WHERE id = 42;',
  '    four spaces',
  '\t\ttabs\tand\ttabs',
  '\n\n\nnewlines\n\n',
  ' \t \n \r\n \t\t\n   \n',
  'line1\r\nline2\rline3\n',
  '                                                                ',
  '1234567890',
  '3.14159265358979323846264338327950288419716939937510',
  '1,000,000 and 1.000.000 and 1 000 000',
  '-42 +17 0x1F 1e-9 ½ ¾ ²³ ٣٤٥ ४२',
  '<|begin_of_text|>',
  '<|begin_of_text|>Hello<|eot_id|>',
  'text <|eot_id|> more text',
  '<|eot_id|><|eot_id|>',
  '<|eot_id',
  '<|eot_id|',
  '|eot_id|>',
  '< |eot_id| >',
  '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  '<|im_start',
  '<|endoftext|>',
  '<s>Hello</s>',
  '<s> Hello </s>',
  '<unk>',
  '</s></s>',
  '[INST] hi [/INST]',
  '<think>\nreasoning\n</think>\n\nanswer',
  '<tool_call>\n{"name": "f"}\n</tool_call>',
  '<|reserved_special_token_5|>',
  '<0x0A>',
  '▁already▁metaspaced',
  'Ġ Ċ ĉ',
  '\u0000\u0001\u0002\u001f\u007f',
  '\u00a0non\u00a0breaking\u2009thin\u3000ideographic',
  '\u200bzero\u200cwidth\u200djoiners\u2060',
  '\u202eright-to-left override\u202c',
  'a\u0300\u0301\u0302\u0303\u0304 stacked combining marks',
  '\u0301leading combining mark',
  '\ue000\uf8ff private use \u{f0000}\u{10fffd}',
  '\u{10000}\u{1d400}\u{1d7ff} \u{20000}\u{2a700} \u{1f600}',
  '\u{e0041}\u{e0042} tag characters',
  '\ufffd replacement \ufffc object',
  'ſ long s and \'ſ',
  'İstanbul ıi ẞ ß Σίσυφος',
  'URL: https://example.com/path?q=1&r=2#frag',
  'email@example.com, @handle, #hashtag',
  '$$ \\frac{a}{b} \\sum_{i=1}^{n} x_i $$',
  '...!!!???,,,;;;:::',
  '——–-‐ “quotes” ‘single’ «guillemets» „low“',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  'abcdefghijklmnopqrstuvwxyz'.repeat(20),
  '😀'.repeat(40),
  '漢'.repeat(100),
  'x'.repeat(1000),
  ' '.repeat(300) + 'x',
  '\n'.repeat(50),
  '9'.repeat(200),
];

// mulberry32: a tiny seeded generator, enough for reproducible variety.
function makeRandom(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const kWords = ('the of and to in is that it was for on are with as they be at one have this ' +
  'from or had by word but what some we can out other were all there when up use your how ' +
  'said an each she which do their time if will way about many then them would write like so ' +
  'these her long make thing see him two has look more day could go come did number sound no ' +
  'most people my over know water than call first who may down side been now find').split(' ');
const kCode = ['if', 'else', 'return', 'function', '=>', '{', '}', '(', ')', ';', '==', '!=',
  '+=', 'self', 'None', 'null', 'true', '[]', '//', '#', '"str"', "'c'", '0', '1', '::',
  'std::vector<int>', '->', '&&', '||', '```', 'import', 'def', '__init__', 'camelCase',
  'snake_case', 'SCREAMING_CASE'];
const kCjk = ['日本', '東京', 'テスト', 'ひらがな', 'カタカナ', '中文', '你好', '世界', '测试',
  '한국어', '안녕', '。', '、', '，', '！', '？', '「', '」'];
const kEmoji = ['🙂', '😀', '🎉', '❤️', '👍', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇺🇸', '🔥',
  '✨', '🧑🏿‍🦱', '☕', '⭐', '🫠'];
const kSpecial = ['<|eot_id|>', '<|begin_of_text|>', '<|im_start|>', '<|im_end|>',
  '<|endoftext|>', '<s>', '</s>', '<unk>', '<|eot_id', 'eot_id|>', '<|', '|>', '<', '>',
  '[INST]', '<think>', '</think>', '<tool_call>'];
const kSpace = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n', '\t\n', '\n ', '    ',
  '\u00a0', '\u3000', '\u2003'];
const kAccents = ['é', 'e\u0301', 'ñ', 'n\u0303', 'ü', 'u\u0308', 'Å', 'A\u030a', 'ệ',
  'e\u0323\u0302', 'ç', 'c\u0327'];

// Code points from long-assigned blocks whose properties PCRE2 (Unicode 14) and Node (15.1)
// agree on, plus private use and combining marks.
const kRanges = [
  [0x20, 0x7e], [0xa0, 0x17f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x5ff],
  [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f],
  [0x20a0, 0x20bf], [0x2100, 0x214f], [0x2190, 0x22ff], [0x2500, 0x257f], [0x3040, 0x30ff],
  [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xe000, 0xf8ff], [0xfb00, 0xfb06], [0xff01, 0xff5e],
  [0x10330, 0x1034a], [0x1d400, 0x1d7ff], [0x1f300, 0x1f5ff], [0x1f600, 0x1f64f],
  [0x20000, 0x2a6df], [0xf0000, 0xffffd], [0xe0020, 0xe007f],
];
const kExcluded = new Set([0x85, 0xfeff]);

function randomCodePoint(rand) {
  const [lo, hi] = kRanges[Math.floor(rand() * kRanges.length)];
  const cp = lo + Math.floor(rand() * (hi - lo + 1));
  return kExcluded.has(cp) ? 'x' : String.fromCodePoint(cp);
}

function pick(rand, list) {
  return list[Math.floor(rand() * list.length)];
}

function randomNumber(rand) {
  const digits = 1 + Math.floor(rand() * (rand() < 0.1 ? 40 : 8));
  let s = '';
  for (let i = 0; i < digits; ++i) s += String(Math.floor(rand() * 10));
  return rand() < 0.2 ? s + '.' + String(Math.floor(rand() * 1000)) : s;
}

// One random string: a few dozen pieces of one or several kinds.
function randomString(rand) {
  const kinds = ['word', 'word', 'word', 'code', 'cjk', 'emoji', 'special', 'space', 'number',
    'accent', 'unicode', 'punct'];
  const mix = rand() < 0.3 ? [pick(rand, kinds)] : kinds;
  const pieces = 1 + Math.floor(rand() * 40);
  let s = '';
  for (let i = 0; i < pieces; ++i) {
    switch (pick(rand, mix)) {
      case 'word': {
        let w = pick(rand, kWords);
        if (rand() < 0.15) w = w[0].toUpperCase() + w.slice(1);
        if (rand() < 0.05) w = w.toUpperCase();
        if (rand() < 0.05) w += pick(rand, ["'s", "'t", "'re", "'LL", "'D"]);
        s += (i > 0 && rand() < 0.85 ? ' ' : '') + w;
        break;
      }
      case 'code': s += (rand() < 0.5 ? ' ' : '') + pick(rand, kCode); break;
      case 'cjk': s += pick(rand, kCjk); break;
      case 'emoji': s += (rand() < 0.3 ? ' ' : '') + pick(rand, kEmoji); break;
      case 'special': s += pick(rand, kSpecial); break;
      case 'space': s += rand() < 0.1 ? pick(rand, kSpace).repeat(1 + Math.floor(rand() * 30))
                                      : pick(rand, kSpace); break;
      case 'number': s += (rand() < 0.5 ? ' ' : '') + randomNumber(rand); break;
      case 'accent': s += pick(rand, kAccents); break;
      case 'unicode': {
        const n = 1 + Math.floor(rand() * 4);
        for (let k = 0; k < n; ++k) s += randomCodePoint(rand);
        break;
      }
      default: s += pick(rand, ['.', ',', '!', '?', ':', ';', '-', '"', "'", '(', ')', '...', '—']);
    }
  }
  return s;
}

export function buildCorpus(count = 2400, seed = 20240521) {
  const rand = makeRandom(seed);
  const corpus = [...kHandPicked];
  while (corpus.length < count) corpus.push(randomString(rand));
  return corpus;
}
