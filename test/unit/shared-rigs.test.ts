// The broker of shared rigs keeps tenant ids unique in a run: files share rigs, and a tenant id a second file
// reused would find the first file's objects upstream as its own. (No rig is started here: ids need none.)
import t from 'tap';
import { claimTenantIds, RIG_BROKER_ENV, RigBroker, sharedRigsOffered } from '../helpers/shared-rigs.ts';

t.test("a tenant id is one file's for the whole run; the second file to use it is told whose it is", async (t) => {
  const broker = new RigBroker();
  const address = await broker.start();
  const before = process.env[RIG_BROKER_ENV];
  process.env[RIG_BROKER_ENV] = address;
  t.teardown(async () => {
    if (before === undefined) delete process.env[RIG_BROKER_ENV];
    else process.env[RIG_BROKER_ENV] = before;
    await broker.stop();
  });
  t.ok(sharedRigsOffered(), 'a process given the address borrows rigs');
  await claimTenantIds(['first1', 'first2'], '/repo/test/integration/one.test.ts');
  await claimTenantIds(['first1'], '/repo/test/integration/one.test.ts');
  await t.rejects(
    claimTenantIds(['other1', 'first2'], '/repo/test/integration/two.test.ts'),
    /tenant id first2 is one\.test\.ts's in this run/,
    'another file reusing an id fails, naming the file that has it',
  );
  await claimTenantIds(['other1'], '/repo/test/integration/two.test.ts');
  t.same(broker.figures, { rigsStarted: 0, loans: 0, discarded: 0 }, 'and no rig was started for it');
});
