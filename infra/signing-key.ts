import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { Function as LambdaFunction } from 'aws-cdk-lib/aws-lambda';
import { Secret } from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';
import type { HefestoConfig } from './config.js';

/**
 * The tree-head signing key (docs/proofs.md, "Keys"; shared/adapters/aws/signing-secret.ts):
 * a Secrets Manager secret whose value Secrets Manager itself generates at deploy,
 * `{"v":1,"seed":"<64 alphanumerics>"}`, from which the API function derives its Ed25519 key
 * once per cold start.
 *
 * Why generated at deploy, not at the first cold start: a first-start key needs a function
 * allowed to create or write secrets (the internet-facing one), a race between two cold
 * starts settled by a conditional create, and a failure mode on the request path; a custom
 * resource would put key material through a provider function and its logs. Secrets
 * Manager's own generator has none of these, and the API role only ever reads.
 *
 * The stack pins the valid key ids (`signingKeyIds`, HEFESTO_SIGNING_KEY_IDS) once they are
 * known: the API function refuses a cold start whose secret does not hold them.
 *
 * Only the API function may read it (GetSecretValue on this secret); the compactor never
 * signs (the witness publishes the receipts the API signed). Kept when the stack goes on
 * stages that retain data: heads it signed must stay verifiable.
 */
export class SigningKey extends Construct {
  readonly secret: Secret;
  readonly #pinned: readonly string[];

  constructor(scope: Construct, id: string, config: HefestoConfig) {
    super(scope, id);
    this.#pinned = config.signingKeyIds ?? [];
    this.secret = new Secret(this, 'Secret', {
      description: `Hefesto ${config.stage}: Ed25519 seed of the tree-head signing key`,
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ v: 1 }),
        generateStringKey: 'seed',
        passwordLength: 64,
        excludePunctuation: true,
        includeSpace: false,
      },
      removalPolicy: config.retainData ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    });
    Validations.of(this.secret).acknowledge({
      id: 'AwsSolutions-SMG4',
      reason:
        'A signing key is rotated by a new secret version that keeps the old public key ' +
        '(rotateSigningSecret), not by a scheduled rotation Lambda that would drop it.',
    });
  }

  /** Lets `fn` (the API function alone) read the secret once per cold start. */
  connect(fn: LambdaFunction): void {
    fn.addEnvironment('HEFESTO_SIGNING_SECRET', this.secret.secretArn);
    // The pin: a secret changed without rotation is refused at cold start (signing-secret.ts).
    if (this.#pinned.length > 0)
      fn.addEnvironment('HEFESTO_SIGNING_KEY_IDS', this.#pinned.join(','));
    // GetSecretValue only (grantRead would add DescribeSecret, which the loader never calls).
    fn.addToRolePolicy(
      new PolicyStatement({
        sid: 'ReadSigningKey',
        actions: ['secretsmanager:GetSecretValue'],
        resources: [this.secret.secretArn],
      }),
    );
  }
}
