import { createHmac, randomBytes } from 'node:crypto';

/** D14.2: a signing secret, `whsec_` + base64 of 24 random bytes. */
export function newSecret(random: (n: number) => Buffer = randomBytes): string {
  return `whsec_${random(24).toString('base64')}`;
}

/**
 * Standard Webhooks signature: `v1,` + base64 HMAC-SHA256, keyed with the base64-decoded part of the
 * secret after `whsec_`, over `{webhook-id}.{webhook-timestamp}.{body}` (the raw body).
 */
export function sign(secret: string, webhookId: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${webhookId}.${timestampSeconds}.${body}`).digest('base64')}`;
}

/**
 * The `webhook-signature` header: one signature per secret in force, space-separated (D14.2: for
 * 24 h after a rotation the replaced secret signs too, so receivers can switch at their pace).
 */
export function signatureHeader(secrets: readonly string[], webhookId: string, timestampSeconds: number, body: string): string {
  return secrets.map((s) => sign(s, webhookId, timestampSeconds, body)).join(' ');
}

/** D14.3: `msg_` + 32 hex digits (a UUID's, without dashes). */
export const webhookIdOf = (uuid: string) => `msg_${uuid.replaceAll('-', '')}`;
