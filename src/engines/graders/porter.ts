// The Porter stemmer exactly as NLTK's PorterStemmer (mode NLTK_EXTENSIONS, its default, which
// METEOR's stem stage uses): the 1980 algorithm plus NLTK's irregular forms and rule tweaks.
// Ported rule by rule from nltk/stem/porter.py (3.8) so METEOR scores match it to the last digit.

const IRREGULAR = new Map<string, string>();
for (const [stem, forms] of Object.entries({
  sky: ["sky", "skies"],
  die: ["dying"],
  lie: ["lying"],
  tie: ["tying"],
  news: ["news"],
  inning: ["innings", "inning"],
  outing: ["outings", "outing"],
  canning: ["cannings", "canning"],
  howe: ["howe"],
  proceed: ["proceed"],
  exceed: ["exceed"],
  succeed: ["succeed"],
}))
  for (const f of forms) IRREGULAR.set(f, stem);

const VOWELS = new Set(["a", "e", "i", "o", "u"]);

function isConsonant(w: string, i: number): boolean {
  if (VOWELS.has(w[i]!)) return false;
  if (w[i] === "y") return i === 0 ? true : !isConsonant(w, i - 1);
  return true;
}

function measure(stem: string): number {
  let seq = "";
  for (let i = 0; i < stem.length; i++) seq += isConsonant(stem, i) ? "c" : "v";
  return seq.split("vc").length - 1;
}

const positive = (s: string) => measure(s) > 0;

function containsVowel(stem: string): boolean {
  for (let i = 0; i < stem.length; i++) if (!isConsonant(stem, i)) return true;
  return false;
}

function endsDoubleConsonant(w: string): boolean {
  return w.length >= 2 && w[w.length - 1] === w[w.length - 2] && isConsonant(w, w.length - 1);
}

function endsCvc(w: string): boolean {
  const n = w.length;
  return (
    (n >= 3 && isConsonant(w, n - 3) && !isConsonant(w, n - 2) && isConsonant(w, n - 1) && !"wxy".includes(w[n - 1]!)) ||
    (n === 2 && !isConsonant(w, 0) && isConsonant(w, 1))
  );
}

type Rule = [suffix: string, replacement: string, condition: ((stem: string) => boolean) | null];

/** The first rule whose suffix matches decides (applied or not); "*d" is a double consonant. */
function applyRules(word: string, rules: Rule[]): string {
  for (const [suffix, replacement, condition] of rules) {
    if (suffix === "*d" && endsDoubleConsonant(word)) {
      const stem = word.slice(0, -2);
      return !condition || condition(stem) ? stem + replacement : word;
    }
    if (word.endsWith(suffix)) {
      const stem = suffix === "" ? word : word.slice(0, -suffix.length);
      return !condition || condition(stem) ? stem + replacement : word;
    }
  }
  return word;
}

function step1a(w: string): string {
  if (w.endsWith("ies") && w.length === 4) return w.slice(0, -3) + "ie";
  return applyRules(w, [
    ["sses", "ss", null],
    ["ies", "i", null],
    ["ss", "ss", null],
    ["s", "", null],
  ]);
}

function step1b(w: string): string {
  if (w.endsWith("ied")) return w.slice(0, -3) + (w.length === 4 ? "ie" : "i");
  if (w.endsWith("eed")) {
    const stem = w.slice(0, -3);
    return measure(stem) > 0 ? stem + "ee" : w;
  }
  let inter: string | undefined;
  for (const suffix of ["ed", "ing"]) {
    if (w.endsWith(suffix)) {
      const s = w.slice(0, -suffix.length);
      if (containsVowel(s)) {
        inter = s;
        break;
      }
    }
  }
  if (inter === undefined) return w;
  const last = inter[inter.length - 1]!;
  return applyRules(inter, [
    ["at", "ate", null],
    ["bl", "ble", null],
    ["iz", "ize", null],
    ["*d", last, () => !"lsz".includes(last)],
    ["", "e", (s) => measure(s) === 1 && endsCvc(s)],
  ]);
}

function step1c(w: string): string {
  return applyRules(w, [["y", "i", (s) => s.length > 1 && isConsonant(s, s.length - 1)]]);
}

function step2(w: string): string {
  if (w.endsWith("alli") && positive(w.slice(0, -4))) return step2(w.slice(0, -4) + "al");
  return applyRules(w, [
    ["ational", "ate", positive],
    ["tional", "tion", positive],
    ["enci", "ence", positive],
    ["anci", "ance", positive],
    ["izer", "ize", positive],
    ["bli", "ble", positive],
    ["alli", "al", positive],
    ["entli", "ent", positive],
    ["eli", "e", positive],
    ["ousli", "ous", positive],
    ["ization", "ize", positive],
    ["ation", "ate", positive],
    ["ator", "ate", positive],
    ["alism", "al", positive],
    ["iveness", "ive", positive],
    ["fulness", "ful", positive],
    ["ousness", "ous", positive],
    ["aliti", "al", positive],
    ["iviti", "ive", positive],
    ["biliti", "ble", positive],
    ["fulli", "ful", positive],
    // NLTK's condition looks at the word minus "ogi", not at the stem.
    ["logi", "log", () => positive(w.slice(0, -3))],
  ]);
}

function step3(w: string): string {
  return applyRules(w, [
    ["icate", "ic", positive],
    ["ative", "", positive],
    ["alize", "al", positive],
    ["iciti", "ic", positive],
    ["ical", "ic", positive],
    ["ful", "", positive],
    ["ness", "", positive],
  ]);
}

function step4(w: string): string {
  const gt1 = (s: string) => measure(s) > 1;
  return applyRules(w, [
    ["al", "", gt1],
    ["ance", "", gt1],
    ["ence", "", gt1],
    ["er", "", gt1],
    ["ic", "", gt1],
    ["able", "", gt1],
    ["ible", "", gt1],
    ["ant", "", gt1],
    ["ement", "", gt1],
    ["ment", "", gt1],
    ["ent", "", gt1],
    ["ion", "", (s) => measure(s) > 1 && (s.endsWith("s") || s.endsWith("t"))],
    ["ou", "", gt1],
    ["ism", "", gt1],
    ["ate", "", gt1],
    ["iti", "", gt1],
    ["ous", "", gt1],
    ["ive", "", gt1],
    ["ize", "", gt1],
  ]);
}

function step5a(w: string): string {
  if (w.endsWith("e")) {
    const stem = w.slice(0, -1);
    const m = measure(stem);
    if (m > 1 || (m === 1 && !endsCvc(stem))) return stem;
  }
  return w;
}

function step5b(w: string): string {
  return applyRules(w, [["ll", "l", () => measure(w.slice(0, -1)) > 1]]);
}

export function porterStem(word: string): string {
  const lower = word.toLowerCase();
  // As NLTK: the irregular-form table is looked up with the word as given.
  if (IRREGULAR.has(word)) return IRREGULAR.get(word)!;
  if (word.length <= 2) return lower;
  return step5b(step5a(step4(step3(step2(step1c(step1b(step1a(lower))))))));
}
