export { AexEscrowClient, USD_CENTS, type AexEscrowClientOptions } from './client-scheme.js';
export { AexEscrowServer, aexEscrowOption, aexNetwork, dollarsToCents, exchangeFacilitator, type AexEscrowOptionInput, type ExchangeFacilitatorOptions } from './server-scheme.js';
export { AEX_ESCROW, X402_VERSION, x402SigningString } from '@aex/contracts/x402-signing';
