/**
 * EXT proof of possession of a signing key (D3.2): the text an agent signs with a new key to show it
 * holds it. It names the account, so a proof made for one account is worthless to another. Defined
 * once here; exported also on its own path (`@aex/contracts/signing-key-proof`) so the client can
 * use it without loading the validators.
 */
export function signingKeyProofMessage(accountId: string, publicKey: string): string {
  return `agent-exchange signing-key proof v1:${accountId}:${publicKey}`;
}
