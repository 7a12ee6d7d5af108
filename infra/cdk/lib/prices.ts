// The dated list prices earshot prices with (docs/prices.json, which `earshot ab` and `earshot plan` read too):
// the dashboard's cost per 1,000 answers, the deploy summary's budget, the endpoint's instance-hour.
import * as fs from 'fs';
import * as path from 'path';

/** The dated list prices `earshot ab` uses too (docs/prices.json), in US dollars. */
export interface Prices {
  readonly asOf: string;
  readonly region: string;
  readonly pollyPerMillionCharacters: number;
  readonly lambdaPerGbSecond: number;
  readonly lambdaPerMillionRequests: number;
  readonly instancePerHour: number;
  readonly instanceType: string;
}

export function publishedPrices(): Prices {
  const p = JSON.parse(fs.readFileSync(path.join(__dirname, '../../../docs/prices.json'), 'utf8'));
  return {
    asOf: p.as_of,
    region: p.region,
    pollyPerMillionCharacters: p.polly_generative_usd_per_million_characters.value,
    lambdaPerGbSecond: p.lambda_usd_per_gb_second.value,
    lambdaPerMillionRequests: p.lambda_usd_per_million_requests.value,
    instancePerHour: p.sagemaker_usd_per_instance_hour.value,
    instanceType: p.sagemaker_usd_per_instance_hour.instance_type,
  };
}

