// The transparent half of the text classifier: obscenity's English word list (with its
// whitelist and leetspeak/confusable handling) sorted into what each word signals, plus a few
// regular expressions for phrasings where a pattern is more precise than nearest examples (a
// first-person threat, a first-person statement of suicidal intent, an age next to a sexual
// term). Each gives one 0/1 feature per category; calibration (calibrate.ts) decides how much it
// counts, so a pattern can raise a score but never sets a category by itself.
import { RegExpMatcher, englishDataset, englishRecommendedTransformers } from "obscenity";
import { CATEGORIES, type Category } from "./categories.js";

/** obscenity's words (its `originalWord`s) by what they signal. Words not listed signal nothing. */
const WORD_GROUPS = {
  /** Slurs against protected groups. */
  slur: ["abo", "abeed", "africoon", "arabush", "boonga", "chingchong", "chink", "dyke", "fag", "kike", "negro", "nigger", "tranny", "retard", "spastic"],
  /** Insults aimed at a person. */
  insult: ["bastard", "bitch", "cunt", "twat", "prick", "whore", "slut", "cuck", "wank", "turd"],
  /** Explicit sexual terms. Anatomy (penis, vagina, anus) and "sex" are left out: medical and
   * educational text uses them plainly. */
  sexual: [
    "anal", "blowjob", "boob", "buttplug", "cock", "cum", "deepthroat", "dick", "dildo", "doggystyle", "double penetration",
    "ejaculate", "felch", "fellatio", "finger bang", "fisting", "gangbang", "handjob", "hentai", "jerk off", "jizz", "lubejob",
    "masturbate", "orgasm", "orgy", "porn", "pussy", "semen", "tit", "incest", "bestiality",
  ],
} as const;

type WordGroup = keyof typeof WORD_GROUPS;

const groupOf = new Map<string, WordGroup>();
for (const [group, words] of Object.entries(WORD_GROUPS) as Array<[WordGroup, readonly string[]]>) for (const w of words) groupOf.set(w, group);

let matcher: RegExpMatcher | undefined;

/** The obscenity groups present in `text`. */
export function wordGroups(text: string): Set<WordGroup> {
  matcher ??= new RegExpMatcher({ ...englishDataset.build(), ...englishRecommendedTransformers });
  const found = new Set<WordGroup>();
  for (const m of matcher.getAllMatches(text)) {
    const word = englishDataset.getPayloadWithPhraseMetadata(m).phraseMetadata?.originalWord;
    const group = word === undefined ? undefined : groupOf.get(word);
    if (group) found.add(group);
  }
  return found;
}

const SECOND_PERSON = /\b(you|u|ur|your|you're|youre|yourself)\b/i;

/** "I'll kill you", "we are going to hurt your family", "gonna stab u": a violent verb aimed at "you" within two words. */
const THREAT =
  /\b(i|we|i'm|im|i am|we're|we are)\s*('ll|will|shall|'m going to|am going to|are going to|'re going to|gonna|going to|'m gonna|am gonna)\s+(\w+\s+)?(kill|murder|hurt|stab|shoot|beat|strangle|choke|burn|break|slit|cut|gut|bury|rape|punch|smash|drown|hang|torture|end)\s+(\w+\s+){0,2}?(you|u|your|ya)\b/i;

/** "I want to kill myself", "I'm going to end my life", "I don't want to be alive anymore". */
const SUICIDAL_INTENT =
  /\b(i|i'm|im|i am|i've|ive)\b[^.!?]{0,40}\b(kill myself|end my life|take my (own )?life|end it all|commit suicide|hurt myself|cut myself|cutting myself|overdose|not (be )?(alive|here) (anymore|tomorrow)|don't want to (live|be alive|wake up|exist))\b/i;

/** A child or a young age... */
const MINOR =
  /\b(child|children|kid|kids|minor|minors|underage|under-age|preteen|pre-teen|prepubescent|toddler|little (girl|boy)s?|young (girl|boy)s?|schoolgirls?|schoolboys?|(1[0-5]|[1-9])\s*(yo|y\/o|years?[- ]old|year olds?))\b/i;
/** ...next to a sexual term. */
const SEXUAL_TERM = /\b(sex|sexual|sexually|nude|nudes|naked|porn|erotic|lewd|explicit|seduce|seducing|aroused|hookup|hook up)\b/i;

/** 0/1 per category (CATEGORIES order): whether the lexicon or a pattern points at it. */
export function lexiconFeatures(text: string): Float32Array {
  const out = new Float32Array(CATEGORIES.length);
  const groups = wordGroups(text);
  const set = (c: Category) => (out[CATEGORIES.indexOf(c)] = 1);
  if (groups.has("slur")) set("hate");
  if (groups.has("insult") && SECOND_PERSON.test(text)) set("harassment");
  if (groups.has("sexual")) set("sexual");
  if (THREAT.test(text)) {
    set("harassment/threatening");
    set("harassment");
    set("violence");
  }
  if (SUICIDAL_INTENT.test(text)) {
    set("self-harm/intent");
    set("self-harm");
  }
  for (const sentence of text.split(/(?<=[.!?\n])\s+/)) {
    if (MINOR.test(sentence) && (SEXUAL_TERM.test(sentence) || wordGroups(sentence).has("sexual"))) {
      set("sexual/minors");
      set("sexual");
      break;
    }
  }
  return out;
}
