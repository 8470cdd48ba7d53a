import { Kysely, PostgresDialect, CamelCasePlugin } from '../services/catalog/node_modules/kysely/dist/esm/index.js';
import pg from 'pg';
import { PostgresLexicon } from '../services/catalog/src/discovery/lexicon.js';
import { LexicalSemanticScorer } from '../services/catalog/src/discovery/scorer.js';
import { WordNet } from '../services/catalog/src/discovery/thesaurus.js';
const url = process.argv[2]!;
const pool = new pg.Pool({ connectionString: url, options: '-c search_path=catalog,public' });
const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }), plugins: [new CamelCasePlugin()] });
const wn = new WordNet();
const scorer = new LexicalSemanticScorer(new PostgresLexicon(db), wn);
const rows = (await pool.query('select id, name, search_doc::text as doc, expansion_doc::text as exp from services')).rows;
const names = new Map(rows.map((r) => [r.id, r.name]));
for (const r of rows) scorer.upsert({ id: r.id, searchDoc: r.doc, expansionDoc: r.exp });
for (const need of process.argv.slice(3)) {
  const rel = await scorer.relevance(need);
  console.log('\n==', need);
  const c = await (scorer as any).concepts((await import('../services/catalog/src/discovery/need.js')).needTokens(need));
  const lexName = new Map([...(scorer as any).lexemeIds].map(([k, v]) => [v, k]));
  for (const x of c) console.log(' ', x.token, x.weight.toFixed(2), [...x.variants].sort((a, b) => b[1] - a[1]).slice(0, 25).map(([l, w]) => `${lexName.get(l)}:${w.toFixed(2)}`).join(' '));
  for (const [id, s] of [...rel].sort((a, b) => b[1] - a[1]).slice(0, 5)) console.log('   ', s.toFixed(3), names.get(id));
}
await pool.end();
