// network_policy of POST /containers (spec 4.2): `{type: disabled}` or `{type: allowlist,
// allowed_domains, domain_secrets?}`. Domains are plain host names (ASCII, punycode for IDNs),
// compared case-insensitively and stored lower-case. Error messages name the field but never
// repeat a secret's value.
import type { ContainerNetworkPolicyParam } from "../../../gen/atrium/v1/containers_pb.js";
import { invalidParam, missingParam } from "../../common/errors.js";

export const MAX_ALLOWED_DOMAINS = 100;
export const MAX_DOMAIN_SECRETS = 100;
export const MAX_SECRET_VALUE_CHARS = 8192;

export interface NetworkPolicy {
  type: "disabled" | "allowlist";
  allowedDomains: string[];
}

export interface DomainSecret {
  domain: string;
  name: string;
  value: string;
}

const LABEL = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?";
// Two labels or more; the last one not all digits (so an IPv4 address is not a domain).
const DOMAIN_RE = new RegExp(`^(?:${LABEL}\\.)+(?=[a-z0-9-]*[a-z])${LABEL}$`);
// Secret names become environment-style variables: a letter or underscore first.
const SECRET_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export function checkDomain(raw: string, param: string): string {
  const d = raw.trim().toLowerCase();
  if (d.length > 253 || !DOMAIN_RE.test(d))
    throw invalidParam(param, `Invalid '${param}': '${raw}' is not a domain name (like 'api.example.com'; IDNs in their xn-- form).`, "invalid_domain");
  return d;
}

export function checkNetworkPolicy(p: ContainerNetworkPolicyParam | undefined): { policy: NetworkPolicy | null; secrets: DomainSecret[] } {
  if (!p) return { policy: null, secrets: [] };
  const at = "network_policy";
  if (p.type === undefined || p.type === "") throw missingParam(`${at}.type`);
  if (p.type === "disabled") {
    if (p.allowedDomains.length) throw invalidParam(`${at}.allowed_domains`, `'${at}.allowed_domains' is only accepted with type 'allowlist'.`);
    if (p.domainSecrets.length) throw invalidParam(`${at}.domain_secrets`, `'${at}.domain_secrets' is only accepted with type 'allowlist'.`);
    return { policy: { type: "disabled", allowedDomains: [] }, secrets: [] };
  }
  if (p.type !== "allowlist")
    throw invalidParam(`${at}.type`, `Invalid value for '${at}.type': '${p.type}'. Supported values are: 'disabled', 'allowlist'.`);

  if (!p.allowedDomains.length) throw invalidParam(`${at}.allowed_domains`, `'${at}.allowed_domains' must list at least one domain for type 'allowlist'.`, "empty_array");
  if (p.allowedDomains.length > MAX_ALLOWED_DOMAINS)
    throw invalidParam(`${at}.allowed_domains`, `'${at}.allowed_domains' can list at most ${MAX_ALLOWED_DOMAINS} domains.`, "array_above_max_length");
  const allowed: string[] = [];
  for (const [i, raw] of p.allowedDomains.entries()) {
    const d = checkDomain(raw, `${at}.allowed_domains[${i}]`);
    if (allowed.includes(d)) throw invalidParam(`${at}.allowed_domains[${i}]`, `Invalid '${at}.allowed_domains[${i}]': '${d}' is listed twice.`);
    allowed.push(d);
  }

  if (p.domainSecrets.length > MAX_DOMAIN_SECRETS)
    throw invalidParam(`${at}.domain_secrets`, `'${at}.domain_secrets' can hold at most ${MAX_DOMAIN_SECRETS} secrets.`, "array_above_max_length");
  const secrets: DomainSecret[] = [];
  for (const [i, s] of p.domainSecrets.entries()) {
    const here = `${at}.domain_secrets[${i}]`;
    if (!s.domain) throw missingParam(`${here}.domain`);
    const domain = checkDomain(s.domain, `${here}.domain`);
    if (!allowed.includes(domain))
      throw invalidParam(`${here}.domain`, `Invalid '${here}.domain': '${domain}' is not in '${at}.allowed_domains'; secrets are only sent to allowed domains.`, "domain_not_allowed");
    if (!s.name) throw missingParam(`${here}.name`);
    if (!SECRET_NAME_RE.test(s.name))
      throw invalidParam(`${here}.name`, `Invalid '${here}.name': use letters, digits and '_' (not starting with a digit), at most 128 characters.`);
    if (secrets.some((x) => x.domain === domain && x.name === s.name))
      throw invalidParam(`${here}.name`, `Invalid '${here}.name': '${s.name}' is given twice for '${domain}'.`);
    if (!s.value) throw missingParam(`${here}.value`);
    if (s.value.length > MAX_SECRET_VALUE_CHARS)
      throw invalidParam(`${here}.value`, `Invalid '${here}.value': at most ${MAX_SECRET_VALUE_CHARS} characters.`, "string_above_max_length");
    secrets.push({ domain, name: s.name, value: s.value });
  }
  return { policy: { type: "allowlist", allowedDomains: allowed }, secrets };
}
