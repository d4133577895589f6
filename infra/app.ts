import { App } from 'aws-cdk-lib';
import { addHefesto, addNagChecks, configFromContext } from './hefesto-app.js';

/**
 * The CDK app (cdk.json: `npx tsx infra/app.ts`). One stack per run, chosen by context:
 * `npx cdk deploy` (dev), `npx cdk deploy -c stage=prod`, `cdklocal deploy -c target=localstack`.
 */
const app = new App();
addHefesto(app, configFromContext(app));
addNagChecks(app);
app.synth();
