// The entry point of this Trellis host, for when you want your own process around it (`npm start`;
// `npx trellis start` runs the same host without this file). Configuration comes from
// trellis.config.json, then TRELLIS_* environment variables (TRELLIS_PORT, TRELLIS_DATABASE,
// TRELLIS__HELLO__GREETING, ...); the modules from trellis.modules.mjs.
import { fileURLToPath } from 'node:url';
import { loadConfig, portProblem } from '@trellis/cli';
import { createHost } from '@trellis/host';
import modules from './trellis.modules.mjs';

async function main() {
  const config = await loadConfig({ config: fileURLToPath(new URL('./trellis.config.json', import.meta.url)) });
  // A taken port is reported before the database is opened or migrated (as `trellis start` does).
  const problem = await portProblem(config.server ?? {});
  if (problem) throw new Error(problem);

  const host = createHost({ config, modules });

  // Pending migrations of every module are applied here (database.migrateOnStart).
  await host.start();
  console.log(`{{name}} is listening on ${host.url} (API docs: ${host.url}/docs)`);

  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      if (stopping) process.exit(1);
      stopping = true;
      // Refuse new connections, let requests in flight finish, close the database.
      host.stop().then(
        () => process.exit(0),
        (error) => {
          console.error(error);
          process.exit(1);
        },
      );
    });
  }
}

main().catch((error) => {
  console.error(`Cannot start: ${error.message}`);
  process.exit(1);
});
