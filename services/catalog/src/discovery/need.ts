import { words } from '../domain/search-text.js';

/**
 * Words that say nothing about *which* service is needed: English function words and the filler of
 * requests ("I need an API that can…"). Removed before matching, so they neither match nor dilute.
 */
const STOPWORDS = new Set(
  `a about above after again against all am an and any are as at be because been before being below between both but by can
  could did do does doing down during each few for from further had has have having he her here hers herself him himself his how
  i if in into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves out
  over own same she should so some such than that the their theirs them themselves then there these they this those through to
  too under until up very was we were what when where which while who whom why will with would you your yours yourself
  yourselves also via per etc e.g ie eg lot lots thing things something someone anything way ways
  need needs needed want wants wanted looking look find finds finding get gets getting give gives please help helps able
  like would could must may might let lets use using used make makes making do does done take takes taking
  service services api apis tool tools agent agents provider endpoint app application system platform solution
  many much several lot lots whether really actually currently right now today tomorrow
  someone somebody one ones given quickly quick fast easily easy simple simply automatically automatic good best`.split(/\s+/),
);

/**
 * The content words of a need, in order, lower-cased, de-duplicated: identifiers are split
 * (`sourceLanguage` → source, language) and function words dropped.
 */
export function needTokens(need: string): string[] {
  const out: string[] = [];
  for (const raw of words(need).split(/[^\p{L}\p{N}']+/u)) {
    const w = raw.toLowerCase().replace(/^'+|'+$/g, '').replace(/'s$/, '');
    if (w.length < 2 || STOPWORDS.has(w) || /^\d+$/.test(w)) continue;
    if (!out.includes(w)) out.push(w);
  }
  return out.slice(0, 32);
}
