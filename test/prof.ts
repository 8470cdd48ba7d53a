import { Kysely, PostgresDialect, CamelCasePlugin } from '../services/catalog/node_modules/kysely/dist/esm/index.js';
import pg from 'pg';
import { PostgresLexicon } from '../services/catalog/src/discovery/lexicon.js';
import { LexicalSemanticScorer } from '../services/catalog/src/discovery/scorer.js';
import { WordNet } from '../services/catalog/src/discovery/thesaurus.js';
import { EVAL_QUERIES } from './bench/discovery/eval-queries.js';
const pool = new pg.Pool({ connectionString: process.argv[2], options: '-c search_path=catalog,public' });
const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }), plugins: [new CamelCasePlugin()] });
const scorer = new LexicalSemanticScorer(new PostgresLexicon(db), new WordNet());
const rows = (await pool.query('select id, search_doc::text as doc, expansion_doc::text as exp from services')).rows;
let t = performance.now();
for (const r of rows) scorer.upsert({ id: r.id, searchDoc: r.doc, expansionDoc: r.exp });
console.log('index', rows.length, (performance.now() - t).toFixed(0), 'ms');
for (const q of EVAL_QUERIES) await scorer.relevance(q.need);
const times: number[] = [];
for (let k = 0; k < 3; k++) for (const q of EVAL_QUERIES) { t = performance.now(); const r = await scorer.relevance(q.need); times.push(performance.now() - t); }
times.sort((a, b) => a - b);
console.log('relevance p50', times[Math.floor(times.length / 2)]!.toFixed(1), 'p95', times[Math.floor(times.length * 0.95)]!.toFixed(1));
await pool.end();
