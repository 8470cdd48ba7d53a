import { runMigrations } from '@aex/platform';
import { database } from './db/migrations/index.js';

// The webhooks schema migrated, then exit: the Helm chart's migrations Job (deploy/helm/agent-exchange).
await runMigrations(database);
