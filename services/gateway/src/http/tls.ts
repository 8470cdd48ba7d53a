import { readFileSync } from 'node:fs';
import { ConfigError, type ExchangeConfig } from '@aex/platform';

/**
 * HTTPS when TLS_CERT_FILE and TLS_KEY_FILE are set (did:web resolvers fetch only https): the files
 * are read once here, and one that cannot be read or is not PEM stops the start naming its variable.
 */
export function tlsOptions(config: Pick<ExchangeConfig, 'TLS_CERT_FILE' | 'TLS_KEY_FILE'>): { https?: { cert: Buffer; key: Buffer } } {
  if (!config.TLS_CERT_FILE || !config.TLS_KEY_FILE) return {};
  const read = (variable: 'TLS_CERT_FILE' | 'TLS_KEY_FILE', file: string, marker: RegExp) => {
    let pem: Buffer;
    try {
      pem = readFileSync(file);
    } catch (err) {
      throw new ConfigError(variable, `names a file that cannot be read: ${(err as Error).message}`);
    }
    if (!marker.test(pem.toString('latin1'))) throw new ConfigError(variable, `names a file that holds no PEM ${variable === 'TLS_CERT_FILE' ? 'certificate' : 'private key'}.`);
    return pem;
  };
  return { https: { cert: read('TLS_CERT_FILE', config.TLS_CERT_FILE, /-----BEGIN CERTIFICATE-----/), key: read('TLS_KEY_FILE', config.TLS_KEY_FILE, /-----BEGIN [A-Z ]*PRIVATE KEY-----/) } };
}
