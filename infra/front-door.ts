import { type RemovalPolicy, Validations } from 'aws-cdk-lib';
import { AccessLogFormat } from 'aws-cdk-lib/aws-apigateway';
import { HttpApi, type HttpStage, LogGroupLogDestination } from 'aws-cdk-lib/aws-apigatewayv2';
import { HttpLambdaIntegration } from 'aws-cdk-lib/aws-apigatewayv2-integrations';
import { FunctionUrlAuthType, type IFunction } from 'aws-cdk-lib/aws-lambda';
import { LogGroup, type RetentionDays } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { HefestoConfig } from './config.js';

/**
 * One JSON line per request (HTTP API `$context` variables). No headers, no query string, no
 * body: the Authorization header and payloads never reach a log.
 */
const ACCESS_LOG_FIELDS = {
  requestId: '$context.requestId',
  ip: '$context.identity.sourceIp',
  requestTime: '$context.requestTimeEpoch',
  method: '$context.httpMethod',
  path: '$context.path',
  status: '$context.status',
  protocol: '$context.protocol',
  responseLength: '$context.responseLength',
  latencyMs: '$context.responseLatency',
  integrationLatencyMs: '$context.integrationLatency',
  integrationStatus: '$context.integrationStatus',
  integrationError: '$context.integrationErrorMessage',
  error: '$context.error.message',
};

export interface FrontDoorProps {
  config: HefestoConfig;
  handler: IFunction;
  removalPolicy: RemovalPolicy;
  logRetention: RetentionDays;
}

/**
 * How requests reach the API function. In AWS: an HTTP API (API Gateway v2) whose `$default`
 * route sends every request to the function (Hono routes them, 404s included), with stage
 * throttling and JSON access logs. On LocalStack's free plan, which has no HTTP API: a
 * Lambda function URL with the same event format (payload v2).
 */
export class FrontDoor extends Construct {
  readonly url: string;
  readonly httpApi: HttpApi | undefined;
  readonly stage: HttpStage | undefined;
  readonly accessLogs: LogGroup | undefined;

  constructor(scope: Construct, id: string, props: FrontDoorProps) {
    super(scope, id);
    if (props.config.frontDoor === 'function-url') {
      this.url = props.handler.addFunctionUrl({ authType: FunctionUrlAuthType.NONE }).url;
      return;
    }
    this.accessLogs = new LogGroup(this, 'AccessLogs', {
      retention: props.logRetention,
      removalPolicy: props.removalPolicy,
    });
    this.httpApi = new HttpApi(this, 'HttpApi', {
      description: `Hefesto ${props.config.stage}: durable state for AI agents`,
      createDefaultStage: false,
      defaultIntegration: new HttpLambdaIntegration('Api', props.handler),
    });
    this.stage = this.httpApi.addStage('Stage', {
      stageName: '$default',
      autoDeploy: true,
      throttle: props.config.throttle,
      accessLogSettings: {
        destination: new LogGroupLogDestination(this.accessLogs),
        format: AccessLogFormat.custom(JSON.stringify(ACCESS_LOG_FIELDS)),
      },
    });
    this.url = this.stage.url;
    Validations.of(this.httpApi).acknowledge({
      id: 'AwsSolutions-APIG4',
      reason:
        'The service authenticates every request itself: API keys stored hashed, scoped ' +
        'to one tenant, revocable (shared/http auth). /healthz, /docs and the OpenAPI ' +
        'document are public on purpose.',
    });
  }
}
