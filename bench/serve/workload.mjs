// What load.mjs sends and when: a seeded PRNG, prompts of random lowercase words, and Poisson
// arrival times. Everything here is a pure function of the seed, so two runs with the same
// options send the same prompts at the same offsets.

// mulberry32: a small 32-bit PRNG, plenty for choosing words and arrival gaps. Returns a
// function giving uniform doubles in [0, 1).
export function Prng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// A seed for one stream of choices (prompts of rate 2, arrivals of tenant b, ...), so that
// adding a rate or a tenant does not shift the others' sequences.
export function SubSeed(seed, ...labels) {
  let h = (seed >>> 0) ^ 0x811c9dc5;
  for (const ch of labels.join('/')) {
    h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  }
  return h;
}

// One word of 2 to 8 random lowercase letters.
function Word(random) {
  const length = 2 + Math.floor(random() * 7);
  let word = '';
  for (let i = 0; i < length; ++i) word += String.fromCharCode(97 + Math.floor(random() * 26));
  return word;
}

// Space-separated random words, at least `chars` characters long (one word at least).
export function Words(random, chars) {
  const words = [Word(random)];
  let length = words[0].length;
  while (length < chars) {
    const word = Word(random);
    words.push(word);
    length += 1 + word.length;
  }
  return words.join(' ');
}

// Arrival offsets in seconds from the window's start. `rate` is requests/s (Infinity: all at
// offset 0); gaps are exponential, so arrivals are a Poisson process. The list stops at
// `count` arrivals (0: no limit) or before `duration_s` (0: no limit); one of them is needed.
export function Arrivals(random, rate, count, duration_s) {
  if (!(count > 0) && !(duration_s > 0)) throw new Error('need a request count or a duration');
  if (rate === Infinity) {
    if (!(count > 0)) throw new Error('rate inf needs --requests');
    return new Array(count).fill(0);
  }
  const offsets = [];
  let t = 0;
  for (;;) {
    t += -Math.log(1 - random()) / rate;
    if (duration_s > 0 && t >= duration_s) break;
    offsets.push(t);
    if (count > 0 && offsets.length >= count) break;
  }
  return offsets;
}
