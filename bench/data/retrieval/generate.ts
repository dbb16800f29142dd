// Generates the retrieval evaluation corpus (corpus.jsonl, questions.jsonl beside this file).
// Deterministic: `node --import tsx bench/data/retrieval/generate.ts` rewrites the same files.
//
// 300 short documents about fictional towns, companies, people, animals and dishes (five
// templates, 60 each), and one question per document. Questions paraphrase the fact they ask
// about: a document says "bicycles", its question says "bikes"; "built", "constructed". Half the
// questions name the document's subject (a rare fictional name: lexical search finds it), half
// describe it only through paraphrased facts (only the meaning leads to the document).
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { Doc, Question } from "./types.js";

function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(20240611);
const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;

const START = ["Var", "Kel", "Dor", "Mir", "Tal", "Bren", "Ost", "Lum", "Sar", "Quen", "Hal", "Ebb", "Zor", "Fen", "Gal", "Ith", "Nor", "Pell", "Rusk", "Wend"];
const MID = ["", "en", "ar", "il", "o"];
const END = ["holt", "mere", "wick", "stead", "dale", "ford", "haven", "thorpe", "by", "ness", "wyn", "ton", "ridge", "more", "field"];
const used = new Set<string>();
function name(): string {
  for (;;) {
    const n = pick(START) + pick(MID) + pick(END);
    if (!used.has(n)) {
      used.add(n);
      return n;
    }
  }
}

// [what the document says, how the question says it]
const CATCH = [["herring", "herring"], ["oysters", "oysters"], ["mackerel", "mackerel"], ["crabs", "crabs"], ["lobsters", "lobsters"], ["mussels", "mussels"], ["sardines", "sardines"], ["cod", "cod"]] as const;
const COAST = [["northern", "north"], ["southern", "south"], ["eastern", "east"], ["western", "west"]] as const;
const REGION = ["Aldmark", "Verellia", "Oskany", "Brightmoor", "Calvane", "Duskerra"];
const PRODUCT = [["bicycles", "bikes"], ["sofas", "couches"], ["wristwatches", "timepieces worn on the arm"], ["umbrellas", "rain shelters you carry"], ["carpets", "rugs"], ["telephones", "phones"], ["sailboats", "yachts"], ["trousers", "pants"], ["spectacles", "eyeglasses"], ["refrigerators", "fridges"], ["motorcycles", "motorbikes"], ["pianos", "keyboard instruments with strings"]] as const;
const CITY = ["Port Aster", "Greyhollow", "Lindmere", "Castor Falls", "Westbridge", "Amberly"];
const PROFESSION = [["astronomer", "stargazer who studied the sky", "discovering a comet that now bears her name", "finding a new comet"], ["botanist", "plant scientist", "cataloguing thousands of alpine flowers", "classifying mountain wildflowers"], ["composer", "writer of music", "a cycle of nine symphonies about the sea", "orchestral works about the ocean"], ["architect", "building designer", "a glass library shaped like an open book", "a transparent book-shaped library"], ["physician", "doctor", "a vaccine against river fever", "an immunisation for a waterborne illness"], ["engineer", "designer of machines", "the first steam tram in the capital", "an early steam-powered streetcar"], ["novelist", "author of fiction", "a trilogy about lighthouse keepers", "three books on the people who tend coastal beacons"], ["chemist", "scientist working with substances", "a dye that does not fade in sunlight", "a colouring that resists the sun"]] as const;
const NATION = ["Verellian", "Oskanian", "Aldish", "Calvanese"];
const INSTITUTION = ["the Royal Academy", "the Observatory of the Hills", "the University of Lindmere", "the Westbridge Institute"];
const CLASS = [["lizard", "reptile"], ["frog", "amphibian"], ["owl", "bird of prey"], ["shrew", "tiny mammal"], ["bat", "flying mammal"], ["beetle", "insect"]] as const;
const HABITAT = [["cloud forests", "misty mountain woods"], ["salt marshes", "coastal wetlands"], ["limestone caves", "underground caverns"], ["pine forests", "conifer woods"], ["desert dunes", "sandy wastes"], ["river islands", "isles in streams"]] as const;
const FOOD = [["ants", "insects that live in colonies"], ["snails", "slow shelled molluscs"], ["berries", "small soft fruit"], ["seeds", "grains"], ["earthworms", "worms from the soil"], ["moths", "night-flying insects"], ["spiders", "eight-legged creatures"], ["nectar", "the sugary liquid of flowers"]] as const;
const DISH = [["lamb", "mutton"], ["chickpeas", "garbanzo beans"], ["beef", "meat from cattle"], ["lentils", "pulses"], ["pork", "meat from pigs"], ["aubergines", "eggplants"], ["mushrooms", "fungi"], ["duck", "waterfowl"]] as const;
const SPICE = [["saffron", "saffron"], ["cumin", "cumin"], ["cinnamon", "cinnamon"], ["smoked paprika", "paprika"], ["cardamom", "cardamom"], ["juniper", "juniper"]] as const;
const OCCASION = [["weddings", "marriage celebrations"], ["the first day of spring", "the start of the spring season"], ["harvest festivals", "autumn crop celebrations"], ["funerals", "memorial gatherings"], ["the winter solstice", "the shortest day of the year"], ["birthdays", "the anniversary of someone's birth"]] as const;
const CUISINE = ["Verellian", "Oskanian", "Aldish", "Calvanese", "mountain", "coastal"];


const docs: Doc[] = [];
const questions: Question[] = [];
const add = (title: string, text: string, named: string, described: string) => {
  const id = `doc${String(docs.length).padStart(3, "0")}`;
  docs.push({ id, title, text });
  const kind = docs.length % 2 === 0 ? "named" : "described";
  questions.push({ doc: id, question: kind === "named" ? named : described, kind });
};

for (let i = 0; i < 60; i++) {
  const town = name();
  const [c, cq] = pick(CATCH);
  const [coast, coastQ] = pick(COAST);
  const region = pick(REGION);
  const year = 1700 + Math.floor(rnd() * 250);
  add(
    town,
    `${town} is a fishing village on the ${coast} coast of ${region}. Every summer its festival celebrates the ${c} harvest, and the harbour lighthouse was built in ${year}.`,
    `When was the lighthouse of ${town} constructed?`,
    `Which seaside hamlet in the ${coastQ} of ${region} holds a yearly party for its ${cq} catch?`,
  );
}
for (let i = 0; i < 60; i++) {
  const company = `${name()} Works`;
  const [p, pq] = pick(PRODUCT);
  const city = pick(CITY);
  const founder = `${pick(["Ada", "Tomas", "Ilse", "Marek", "Yara", "Oskar", "Lena", "Piet"])} ${name()}`;
  const staff = 50 + Math.floor(rnd() * 900);
  add(
    company,
    `${company} manufactures ${p} in a factory near ${city}. The firm was founded by ${founder} and today employs about ${staff} people.`,
    `Who set up ${company}?`,
    `Which business near ${city} produces ${pq}?`,
  );
}
for (let i = 0; i < 60; i++) {
  const person = `${pick(["Elsa", "Marta", "Ingrid", "Sofia", "Helena", "Clara", "Vera", "Nadia"])} ${name()}`;
  const [prof, profQ, feat, featQ] = pick(PROFESSION);
  const nation = pick(NATION);
  const inst = pick(INSTITUTION);
  add(
    person,
    `${person} was a ${nation} ${prof} best known for ${feat}. She spent most of her career at ${inst}.`,
    `Where did ${person} do most of her work?`,
    `Which ${nation} ${profQ} is remembered for ${featQ}?`,
  );
}
for (let i = 0; i < 60; i++) {
  const animal = `${name()} ${pick(CLASS)[0]}`;
  const cls = CLASS.find(([c]) => animal.endsWith(c))!;
  const [hab, habQ] = pick(HABITAT);
  const region = pick(REGION);
  const [food, foodQ] = pick(FOOD);
  add(
    animal,
    `The ${animal} is a small ${cls[0]} found only in the ${hab} of ${region}. It feeds mainly on ${food} and hunts at night.`,
    `What is the diet of the ${animal}?`,
    `Which nocturnal ${cls[1]} of ${region}'s ${habQ} eats ${foodQ}?`,
  );
}
for (let i = 0; i < 60; i++) {
  const dish = `${name()} pot`;
  const [main, mainQ] = pick(DISH);
  const [spice, spiceQ] = pick(SPICE);
  const [occ, occQ] = pick(OCCASION);
  const cuisine = pick(CUISINE);
  add(
    dish,
    `${dish} is a ${cuisine} stew of ${main} slowly cooked with onions and ${spice}. It is traditionally served at ${occ}.`,
    `On what occasion is ${dish} eaten?`,
    `Which ${cuisine} stew made from ${mainQ} and ${spiceQ} is served at ${occQ}?`,
  );
}

const here = (f: string) => fileURLToPath(new URL(f, import.meta.url));
writeFileSync(here("./corpus.jsonl"), docs.map((d) => JSON.stringify(d)).join("\n") + "\n");
writeFileSync(here("./questions.jsonl"), questions.map((q) => JSON.stringify(q)).join("\n") + "\n");
console.log(`${docs.length} documents, ${questions.length} questions`);
