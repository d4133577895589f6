import { Duration, Stack } from 'aws-cdk-lib';
import type { HttpApi } from 'aws-cdk-lib/aws-apigatewayv2';
import {
  Alarm,
  AlarmStatusWidget,
  ComparisonOperator,
  Dashboard,
  GraphWidget,
  type IMetric,
  MathExpression,
  Metric,
  SingleValueWidget,
  TreatMissingData,
} from 'aws-cdk-lib/aws-cloudwatch';
import { SnsAction } from 'aws-cdk-lib/aws-cloudwatch-actions';
import type { Table } from 'aws-cdk-lib/aws-dynamodb';
import type { Rule } from 'aws-cdk-lib/aws-events';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import { FilterPattern, type ILogGroup, MetricFilter } from 'aws-cdk-lib/aws-logs';
import { type ITopic, Topic } from 'aws-cdk-lib/aws-sns';
import { Construct } from 'constructs';
import type { HefestoConfig } from './config.js';

export interface ObservabilityProps {
  config: HefestoConfig;
  api: IFunction;
  apiLogs: ILogGroup;
  compactor: IFunction;
  compactorLogs: ILogGroup;
  schedule: Rule;
  table: Table;
  /** Absent when the front door is a function URL (LocalStack). */
  httpApi: HttpApi | undefined;
}

const FIVE_MINUTES = Duration.minutes(5);

/**
 * Alarms and one dashboard:
 * - 5xx rate of the HTTP API (percent of requests, judged above a minimum of requests);
 * - throttles: Lambda throttles of either function, DynamoDB throttle events;
 * - compactor failures: errors and timeouts of the function, failed schedule deliveries,
 *   and streams whose visit failed (counted in the run's report line; the run goes on);
 * - ErrTamperedLedger seen: metric filters on both functions' logs (`code` of the request
 *   log, `err.code` of a logged error). Any single occurrence alarms: stored data changed.
 * Every alarm notifies the configured SNS topic, if any.
 */
export class Observability extends Construct {
  readonly alarms: Alarm[] = [];
  readonly dashboard: Dashboard;
  /** Count of log lines with code ErrTamperedLedger. */
  readonly tampered: Metric;
  private readonly topic: ITopic | undefined;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const { config, api, compactor, table, httpApi } = props;
    const namespace = `Hefesto/${Stack.of(this).stackName}`;
    const topicArn = config.alarms.topicArn;
    this.topic = topicArn ? Topic.fromTopicArn(this, 'AlarmTopic', topicArn) : undefined;

    this.tampered = new Metric({
      namespace,
      metricName: 'TamperedLedgerSeen',
      statistic: 'Sum',
      period: FIVE_MINUTES,
    });
    // The request log writes `code`; a logged error object carries it as `err.code`.
    const tamperedLine = FilterPattern.any(
      FilterPattern.stringValue('$.code', '=', 'ErrTamperedLedger'),
      FilterPattern.stringValue('$.err.code', '=', 'ErrTamperedLedger'),
    );
    for (const [name, logGroup] of [
      ['Api', props.apiLogs],
      ['Compactor', props.compactorLogs],
    ] as const) {
      new MetricFilter(this, `Tampered${name}`, {
        logGroup,
        filterPattern: tamperedLine,
        metricNamespace: namespace,
        metricName: 'TamperedLedgerSeen',
        metricValue: '1',
      });
    }
    // A stream whose visit fails is logged and the run goes on; the run's report line
    // (`{"compaction":{"errors":N,...}}`) counts them.
    new MetricFilter(this, 'CompactorStreamErrors', {
      logGroup: props.compactorLogs,
      filterPattern: FilterPattern.numberValue('$.compaction.errors', '>', 0),
      metricNamespace: namespace,
      metricName: 'CompactorStreamErrors',
      metricValue: '$.compaction.errors',
    });

    const sum = (metric: Metric) => metric.with({ statistic: 'Sum', period: FIVE_MINUTES });
    const throttles = new MathExpression({
      label: 'Lambda throttles',
      expression: 'FILL(apiThrottles, 0) + FILL(compactorThrottles, 0)',
      usingMetrics: {
        apiThrottles: sum(api.metricThrottles()),
        compactorThrottles: sum(compactor.metricThrottles()),
      },
      period: FIVE_MINUTES,
    });
    const storageThrottles = new MathExpression({
      label: 'DynamoDB throttle events',
      expression: 'FILL(reads, 0) + FILL(writes, 0)',
      usingMetrics: {
        reads: sum(table.metric('ReadThrottleEvents')),
        writes: sum(table.metric('WriteThrottleEvents')),
      },
      period: FIVE_MINUTES,
    });
    const compactorFailures = new MathExpression({
      label: 'Compactor failures',
      expression: 'FILL(errors, 0) + FILL(failedDeliveries, 0) + FILL(streamErrors, 0)',
      usingMetrics: {
        errors: sum(compactor.metricErrors()),
        streamErrors: new Metric({
          namespace,
          metricName: 'CompactorStreamErrors',
          statistic: 'Sum',
          period: FIVE_MINUTES,
        }),
        failedDeliveries: new Metric({
          namespace: 'AWS/Events',
          metricName: 'FailedInvocations',
          dimensionsMap: { RuleName: props.schedule.ruleName },
          statistic: 'Sum',
          period: FIVE_MINUTES,
        }),
      },
      period: FIVE_MINUTES,
    });

    const serverErrorRate = httpApi && this.serverErrorRate(httpApi, config);
    if (serverErrorRate) {
      this.alarm('ServerErrorRate', serverErrorRate, config.alarms.serverErrorPercent, {
        description: `More than ${config.alarms.serverErrorPercent}% of API requests answered 5xx`,
        evaluationPeriods: 3,
        datapointsToAlarm: 2,
      });
    }
    this.alarm('FunctionThrottles', throttles, 1, {
      description: 'A Lambda function of the service was throttled (concurrency limit)',
    });
    this.alarm('StorageThrottles', storageThrottles, 1, {
      description: 'DynamoDB throttled requests of the service',
    });
    this.alarm('CompactorFailures', compactorFailures, 1, {
      description: 'The compactor failed, timed out, or its schedule could not invoke it',
    });
    this.alarm('TamperedLedger', this.tampered, 1, {
      description: 'ErrTamperedLedger seen: stored ledger data does not match its hashes',
    });

    this.dashboard = new Dashboard(this, 'Dashboard', {
      dashboardName: `${Stack.of(this).stackName}`,
      defaultInterval: Duration.hours(3),
    });
    const graph = (title: string, left: IMetric[], right: IMetric[] = []) =>
      new GraphWidget({ title, left, right, width: 8 });
    if (httpApi && serverErrorRate) {
      this.dashboard.addWidgets(
        graph('API requests', [sum(httpApi.metricCount())], [serverErrorRate]),
        graph('API errors', [sum(httpApi.metricClientError()), sum(httpApi.metricServerError())]),
        graph('API latency (ms)', [
          httpApi.metricLatency({ statistic: 'p50' }),
          httpApi.metricLatency({ statistic: 'p99' }),
          httpApi.metricIntegrationLatency({ statistic: 'p99' }),
        ]),
      );
    }
    this.dashboard.addWidgets(
      graph(
        'API function',
        [sum(api.metricInvocations()), sum(api.metricErrors())],
        [api.metricDuration({ statistic: 'p99' })],
      ),
      graph('Throttles', [throttles, storageThrottles]),
      graph('DynamoDB capacity', [
        sum(table.metricConsumedReadCapacityUnits()),
        sum(table.metricConsumedWriteCapacityUnits()),
      ]),
    );
    this.dashboard.addWidgets(
      graph(
        'Compactor',
        [sum(compactor.metricInvocations()), compactorFailures],
        [compactor.metricDuration({ statistic: 'Maximum' })],
      ),
      new SingleValueWidget({
        title: 'ErrTamperedLedger seen',
        metrics: [this.tampered],
        width: 8,
      }),
      new AlarmStatusWidget({ title: 'Alarms', alarms: this.alarms, width: 8 }),
    );
  }

  private serverErrorRate(httpApi: HttpApi, config: HefestoConfig): MathExpression {
    return new MathExpression({
      label: '5xx (% of requests)',
      expression: `IF(requests >= ${config.alarms.minRequests}, 100 * errors / requests, 0)`,
      usingMetrics: {
        requests: httpApi.metricCount({ statistic: 'Sum', period: FIVE_MINUTES }),
        errors: httpApi.metricServerError({ statistic: 'Sum', period: FIVE_MINUTES }),
      },
      period: FIVE_MINUTES,
    });
  }

  private alarm(
    id: string,
    metric: IMetric,
    threshold: number,
    options: { description: string; evaluationPeriods?: number; datapointsToAlarm?: number },
  ): Alarm {
    const alarm = new Alarm(this, id, {
      metric,
      threshold,
      comparisonOperator: ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
      evaluationPeriods: options.evaluationPeriods ?? 1,
      datapointsToAlarm: options.datapointsToAlarm ?? 1,
      treatMissingData: TreatMissingData.NOT_BREACHING,
      alarmDescription: options.description,
    });
    if (this.topic) alarm.addAlarmAction(new SnsAction(this.topic));
    this.alarms.push(alarm);
    return alarm;
  }
}
