/**
 * The part of the WebAssembly JavaScript API the catalog uses (discovery/int8-dot.ts). Node has all
 * of it; TypeScript declares it only in its DOM library, which this project does not load, and
 * @types/node 20 does not declare it.
 */
declare namespace WebAssembly {
  interface MemoryDescriptor {
    initial: number;
    maximum?: number;
  }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer;
    /** Adds `pages` pages of 64 KiB (the old `buffer` is detached); returns the previous size in pages. */
    grow(pages: number): number;
  }
  class Module {
    constructor(bytes: Uint8Array);
  }
  class Instance {
    constructor(module: Module, imports?: Record<string, Record<string, unknown>>);
    readonly exports: Record<string, unknown>;
  }
  function validate(bytes: Uint8Array): boolean;
}
