import { join } from 'node:path';
import type { RemovalPolicy } from 'aws-cdk-lib';
import { Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { LoggingFormat } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import {
  cdkBundling,
  entryPath,
  type FunctionName,
  LAMBDA_ARCHITECTURE,
  LAMBDA_RUNTIME,
  REPO_ROOT,
} from './bundling.js';
import type { FunctionConfig } from './config.js';

export interface HefestoFunctionProps {
  name: FunctionName;
  description: string;
  config: FunctionConfig;
  logRetention: RetentionDays;
  removalPolicy: RemovalPolicy;
  /** Settings of the service (HEFESTO_*); storage env is added by HefestoStorage.connect. */
  environment: Record<string, string>;
  /** Retries of an asynchronous invocation (the schedule); API calls are synchronous. */
  retryAttempts?: number;
}

/**
 * One Lambda function of the service: bundled locally by esbuild (infra/bundling.ts), with
 * its own role that starts empty (no managed policy) and its own log group with a
 * retention. The role gets only what this construct grants (writing to its log group) and
 * what HefestoStorage.connect grants (the port operations the function calls).
 */
export class HefestoFunction extends Construct {
  readonly fn: NodejsFunction;
  readonly role: Role;
  readonly logGroup: LogGroup;

  constructor(scope: Construct, id: string, props: HefestoFunctionProps) {
    super(scope, id);
    this.role = new Role(this, 'Role', {
      assumedBy: new ServicePrincipal('lambda.amazonaws.com'),
      description: `Hefesto ${props.name} function`,
    });
    this.logGroup = new LogGroup(this, 'Logs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.logGroup.grantWrite(this.role);

    this.fn = new NodejsFunction(this, 'Function', {
      description: props.description,
      entry: entryPath(props.name),
      handler: 'handler',
      projectRoot: REPO_ROOT,
      depsLockFilePath: join(REPO_ROOT, 'package-lock.json'),
      runtime: LAMBDA_RUNTIME,
      architecture: LAMBDA_ARCHITECTURE,
      memorySize: props.config.memoryMiB,
      timeout: props.config.timeout,
      reservedConcurrentExecutions: props.config.reservedConcurrency,
      retryAttempts: props.retryAttempts,
      role: this.role,
      logGroup: this.logGroup,
      // Platform lines (START, REPORT, init errors) as JSON, like the service's own lines.
      loggingFormat: LoggingFormat.JSON,
      // The service's memory ceiling is the function's memory (settings.ts, "work"): its
      // caches and requests draw on one pool of it (memory-pool.ts).
      environment: { HEFESTO_MEMORY_MIB: String(props.config.memoryMiB), ...props.environment },
      bundling: cdkBundling(),
    });
  }
}
