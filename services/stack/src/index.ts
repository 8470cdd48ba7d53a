export { startStack, type Stack } from './stack.js';
