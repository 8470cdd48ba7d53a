import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

/**
 * A CPU profile of this process (`--cpu-prof <file>` of the benchmarks): sampled every 200 µs from
 * `start` to `stop`, written as a `.cpuprofile` (Chrome DevTools, speedscope). Unlike node's own
 * `--cpu-prof`, it covers only the part measured, not the setup and the baseline.
 */
export async function startCpuProfile(): Promise<{ stop(file: string): Promise<void> }> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 200 });
  await session.post('Profiler.start');
  return {
    async stop(file) {
      const { profile } = await session.post('Profiler.stop');
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
    },
  };
}
