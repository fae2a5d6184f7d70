// The modules this host loads: every built-in one plus your own. server.mjs and the `trellis`
// command (run from this folder) both read this list, so `npx trellis migrate` and
// `npx trellis start` see your modules too.
import { coreModules } from '@trellis/core';
import { helloModule } from './modules/hello.mjs';

export default [...coreModules, helloModule];
