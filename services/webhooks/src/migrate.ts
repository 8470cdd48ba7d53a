import { runMigrations } from '@aex/platform';
import { database } from './service.js';

// The webhooks schema migrated, then exit: the Helm chart's migrations Job (deploy/helm/agent-exchange).
await runMigrations('webhooks', database);
