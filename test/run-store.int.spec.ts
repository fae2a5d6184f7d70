import { preparedStatementsServiceIdentifier, pubSubServiceIdentifier } from '@trellis/core';
import { describeRunStoreContract, startTestKernel, testDatabases } from '@trellis/test-support';

// The run store each database adapter supplies (`DatabaseAdapter.runStore`), against one contract.
for (const db of testDatabases()) {
  describeRunStoreContract(db.name, async () => {
    const { kernel, close } = await startTestKernel(db);
    const fork = () => kernel.fork();
    const store = kernel.database.runStore!({ fork, sql: kernel.get(preparedStatementsServiceIdentifier), pubsub: kernel.get(pubSubServiceIdentifier) });
    return { store, fork, close };
  });
}
