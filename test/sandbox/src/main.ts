import { loadConfig, SandboxConfigError, type SandboxConfig } from './config.ts';
import { ACCOUNTS, DEMO_PASSWORD, startSandbox } from './index.ts';

function readConfig(): SandboxConfig {
  try {
    return loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof SandboxConfigError)) throw error;
    console.error(error.message);
    process.exit(1);
  }
}

const config = readConfig();
const running = await startSandbox({
  port: config.port,
  host: config.host,
  control: config.control,
  clients: [config.client],
  ...(config.publicUrl === undefined ? {} : { publicUrl: config.publicUrl }),
  ...(config.requestLogLimit === undefined ? {} : { requestLogLimit: config.requestLogLimit }),
});

console.log(`Provider sandbox listening on ${running.url}`);
console.log(`  authorize: ${running.url}/{fr|nl}/api/oauth2/authorize`);
console.log(`  client:    ${config.client.client_id} -> ${config.client.redirect_uris.join(', ')}`);
if (config.developmentDefaults.length > 0)
  console.log(`  (development defaults for ${config.developmentDefaults.join(', ')})`);
console.log(
  `  control API: ${config.control ? `${running.url}/_control/` : 'disabled (SANDBOX_CONTROL=1)'}`,
);
console.log(`Demo accounts (password "${DEMO_PASSWORD}"):`);
for (const account of ACCOUNTS) {
  const licenses = account.licenses.map((license) => `${license.name} [${license.id}]`);
  console.log(`  ${account.email} (${account.language}): ${licenses.join('; ')}`);
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.log(`${signal}: closing the sandbox`);
    running.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
