#!/usr/bin/env node
import { runCli } from './program.js';

const code = await runCli(process.argv);
// Let stdout and stderr drain (they are asynchronous when piped on some platforms), then exit:
// open handles such as a database pool must not keep a finished command alive.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
