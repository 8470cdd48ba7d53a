import { Point } from '@noble/ed25519';
import { describe, expect, it } from 'vitest';
import { generateSigningKey, signingKeyProof } from '@agent-exchange/client';
import { signingKeyProofMessage } from '@aex/contracts';
import { signingKeyProblem, verifySigningKeyProof } from '../src/domain/signing-keys.js';

// D3.2 signing keys: only keys that can come from a secret key, and proof of possession.

const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64');

describe('weak and malformed Ed25519 keys', () => {
  it.each([
    ['all zero', '0000000000000000000000000000000000000000000000000000000000000000'],
    ['the identity point', '0100000000000000000000000000000000000000000000000000000000000000'],
    ['order 2', 'ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'],
    ['order 8', 'c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a'],
    ['order 8 (other sign)', '26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85'],
  ])('refuses %s', (_label, hex) => {
    expect(signingKeyProblem(b64(hex))).toBe('is a weak Ed25519 key (small-order or mixed-order point)');
  });

  it('refuses a non-canonical encoding and a value off the curve', () => {
    expect(signingKeyProblem(b64('edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f'))).toBe('is not a point of the Ed25519 curve');
    expect(signingKeyProblem(b64('0200000000000000000000000000000000000000000000000000000000000000'))).toBe('is not a point of the Ed25519 curve');
  });

  it('refuses a real key with a small-order component added (mixed order)', () => {
    const real = Point.fromBytes(Buffer.from(generateSigningKey().publicKey, 'base64'));
    const torsion = Point.fromBytes(Buffer.from('c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a', 'hex'));
    expect(signingKeyProblem(Buffer.from(real.add(torsion).toBytes()).toString('base64'))).toBe('is a weak Ed25519 key (small-order or mixed-order point)');
  });

  it('refuses what is not the canonical base64 of 32 bytes, and accepts a generated key', () => {
    expect(signingKeyProblem(Buffer.alloc(31, 7).toString('base64'))).toBe('must be the base64 of a raw 32-byte Ed25519 public key');
    expect(signingKeyProblem(generateSigningKey().publicKey.replace(/=$/, ''))).toBe('must be the base64 of a raw 32-byte Ed25519 public key');
    expect(signingKeyProblem(generateSigningKey().publicKey)).toBeNull();
  });
});

describe('proof of possession', () => {
  const account = '6d2f0c1e-7a5b-4c1f-9f0e-2b7c1d3e4f50';

  it('verifies the proof the client makes, bound to the account', () => {
    const keys = generateSigningKey();
    const proof = signingKeyProof(keys.secretKey, account);
    expect(verifySigningKeyProof(account, keys.publicKey, proof)).toBe(true);
    expect(verifySigningKeyProof('00000000-0000-4000-8000-000000000000', keys.publicKey, proof)).toBe(false);
    expect(verifySigningKeyProof(account, generateSigningKey().publicKey, proof)).toBe(false);
    expect(verifySigningKeyProof(account, keys.publicKey, proof.replace(/^./, (c) => (c === 'A' ? 'B' : 'A')))).toBe(false);
    expect(signingKeyProofMessage(account, keys.publicKey)).toBe(`agent-exchange signing-key proof v1:${account}:${keys.publicKey}`);
  });
});
