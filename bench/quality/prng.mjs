// The benchmark's seeded random streams: xoshiro128**, so documents depend on nothing but the
// seed, and share no stream with the numpy PCG64 ones kvd-tiny was trained on.

// murmur3's 32-bit finalizer: spreads a word over all bits.
function Mix(x) {
  x = Math.imul(x ^ (x >>> 16), 0x85ebca6b);
  x = Math.imul(x ^ (x >>> 13), 0xc2b2ae35);
  return (x ^ (x >>> 16)) >>> 0;
}

const Rotl = (x, k) => (x << k) | (x >>> (32 - k));

// A stream for the key `parts` (non-negative integers below 2^53: the seed, then labels such as
// a document's index); different keys give unrelated streams. Returns a function giving uniform
// doubles in [0, 1) with 32 random bits.
export function Prng(...parts) {
  let h = 0x9e3779b9;
  for (const part of parts) {
    if (!Number.isSafeInteger(part) || part < 0) throw new Error(`bad PRNG key part ${part}`);
    h = Mix(h ^ (part >>> 0));
    h = Mix(h ^ Math.floor(part / 4294967296));
  }
  const s = new Uint32Array(4);  // filled splitmix-style: a Weyl sequence through the finalizer
  for (let i = 0; i < 4; ++i) {
    h = (h + 0x9e3779b9) >>> 0;
    s[i] = Mix(h);
  }
  if (s[0] === 0 && s[1] === 0 && s[2] === 0 && s[3] === 0) s[0] = 1;  // xoshiro's fixed point
  return () => {
    const result = Math.imul(Rotl(Math.imul(s[1], 5), 7), 9) >>> 0;
    const t = s[1] << 9;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = Rotl(s[3], 11);
    return result / 4294967296;
  };
}

// A uniform integer in [0, n), like numpy's rng.integers(n).
export const Integer = (random, n) => Math.floor(random() * n);
