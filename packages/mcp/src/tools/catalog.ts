import { approvePurchase, denyPurchase, listApprovals } from './approvals.js';
import { acceptDelivery, buyService, cancelTransaction, negotiate, waitForDelivery } from './buying.js';
import { getService, searchServices } from './discovery.js';
import { decideDispute, getDispute, openDispute, respondDispute } from './disputes.js';
import { deliver, listPendingDeliveries, pauseService, registerService, updateService } from './selling.js';
import type { Tool } from './tool.js';
import { callInSession, closeSession, getReceipt, getSession, openSession } from './sessions.js';
import { getTransaction, listTransactions } from './transactions.js';
import { getBalance } from './wallet.js';

/** Every tool of the server, in the order tools/list gives them (server.ts `toolsOf` picks those a run lists). */
export const TOOLS: readonly Tool[] = [
  searchServices, getService, getBalance, buyService, negotiate, getTransaction, listTransactions, waitForDelivery, acceptDelivery,
  openDispute, getDispute, decideDispute, cancelTransaction, listApprovals, approvePurchase, denyPurchase,
  openSession, callInSession, getSession, closeSession, getReceipt,
  registerService, updateService, pauseService, listPendingDeliveries, deliver, respondDispute,
];
