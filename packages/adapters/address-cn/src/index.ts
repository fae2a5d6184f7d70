import { createRequire } from 'node:module';
import type { AddressCandidate, AddressParser, ParsedAddress, ParsedAddressField } from '@trellis/core';

/** The parts of the `address-parse` package (CommonJS, untyped) this parser uses. */
interface AddressParseResult {
  province: string;
  city: string;
  area: string;
  details: string;
  name: string;
  code: string;
  __parse: number;
  mobile: string;
  zip_code: string;
  phone: string;
}
interface AddressParseModule {
  default: { parse(address: string, all?: boolean): AddressParseResult[] };
  AREA: { province_list: Record<string, string>; city_list: Record<string, string>; area_list: Record<string, string> };
}

const require = createRequire(import.meta.url);
const addressParse = require('address-parse') as AddressParseModule;

/** The region data this parser uses: provinces, cities and districts keyed by their division codes. */
export const regionData = addressParse.AREA;

/** The country code before a number, bare or in brackets: `+86`, `86-`, `(+86)`, `（+86）`, `0086`. */
const COUNTRY = String.raw`(?:[(（]\s*(?:\+|00)?86\s*[)）]|(?:\+|00)?86)[\s-]*`;
const MOBILE = new RegExp(String.raw`(?<![\d])(?:${COUNTRY})?(1[3-9]\d)[\s-]?(\d{4})[\s-]?(\d{4})(?![\d])`);
const LANDLINE = new RegExp(String.raw`(?<![\d])(?:${COUNTRY})?[(（]?(0\d{2,3})[)）]?[\s-]?(\d{7,8})(?:[-转]\d{1,6})?(?![\d])`);
/** A country code left without a number after it (`(+86)` at the end of a line). */
const STRAY_COUNTRY = /[(（]\s*(?:\+|00)?86\s*[)）]|(?<![\d])(?:\+|00)86(?![\d])/g;
/** Municipalities: the province and the city are one, both named in full (`北京市`). */
const MUNICIPALITIES: Record<string, string> = { '11': '北京市', '12': '天津市', '31': '上海市', '50': '重庆市' };
/** What follows a place name when it is part of a street's or a building's name (中山路, 南京东路 is not one). */
const ROAD_SUFFIX = /^(?:[东南西北中]?(?:路|街|大街|道|大道|巷|弄|胡同|里)|桥|广场|大厦|公园|小区)/;
/** Administrative suffixes stripped to find a region's name as people write it (深圳市 → 深圳). */
const REGION_SUFFIX = /(?:省|市|自治区|自治州|自治县|特别行政区|地区|新区|区|县|盟|旗)$/;
const POSTAL = /(?<![\d])(\d{6})(?![\d])/;
/** Field labels people type before values ("收货人：", "电话:", "详细地址"), and list punctuation. */
const LABELS = /(收货人|收件人|联系人|姓名|名字|手机号码|手机号|手机|电话号码|联系电话|电话|固话|所在地区|所在地|详细地址|收货地址|地址|邮编|邮政编码)\s*[:：]?/g;
const NAME = /^[\p{Script=Han}·]{2,5}$|^[A-Za-z][A-Za-z .'-]{0,40}$/u;

const field = (value: string, confidence: number): ParsedAddressField => ({ value, confidence: value ? Math.round(confidence * 100) / 100 : 0 });

/**
 * AddressParser on the `address-parse` package (MIT; GB/T 2260 province, city and district data,
 * updated with the package): recipient, phone, region and detailed address from free Chinese text
 * in any order and punctuation, offline.
 *
 * Around the package: labels and phone numbers (mobile with or without +86 and separators,
 * landline with area code) are taken out first, so they never end up in the name or the detail;
 * every reading the package produces is kept, and when the best readings disagree on the region
 * (a district name such as 鼓楼区 exists in several cities) they come back as `candidates` and the
 * region fields' confidence drops accordingly. Confidence per field: the package's match score for
 * the region levels (whether each level was written out or inferred), the shape of the value for
 * name and phone.
 */
export class ChineseAddressParser implements AddressParser {
  readonly name = 'address-parse';

  async parse(text: string): Promise<ParsedAddress> {
    let rest = text.normalize('NFKC').replace(LABELS, ' ');
    let phone: ParsedAddress['phone'] = { value: '', confidence: 0, kind: '' };
    const mobile = MOBILE.exec(rest);
    if (mobile) {
      phone = { value: `${mobile[1]}${mobile[2]}${mobile[3]}`, confidence: 0.99, kind: 'mobile' };
      rest = rest.replace(mobile[0], ' ');
    } else {
      const landline = LANDLINE.exec(rest);
      if (landline) {
        phone = { value: `${landline[1]}-${landline[2]}`, confidence: 0.9, kind: 'landline' };
        rest = rest.replace(landline[0], ' ');
      }
    }
    let postalCode = '';
    const postal = POSTAL.exec(rest);
    if (postal) {
      postalCode = postal[1]!;
      rest = rest.replace(postal[0], ' ');
    }
    rest = rest.replace(STRAY_COUNTRY, ' ');
    rest = rest.replace(/[,，;；、|\n\r\t]+/g, ' ').replace(/\s+/g, ' ').trim();
    // Readings whose region was read out of a street name (中山路 is no sign of 中山市) lose those
    // levels; a reading left with nothing written in the text is dropped.
    const raw = rest ? addressParse.default.parse(rest, true) : [];
    const results = raw.map((result) => withoutRoadRegions(result, rest)).filter((result) => result !== null);
    const best = results[0];
    // When the package's own best reading went, its details of the others are no guide either.
    if (best && raw[0] && best.code !== raw[0].code) best.details = stripRegions(rest, [best.province, best.city, best.area]);
    if (!best || (!best.province && !best.city && !best.area)) {
      const name = pickName(rest.split(' '));
      return {
        name: field(name, name ? 0.6 : 0),
        phone,
        province: field('', 0),
        city: field('', 0),
        district: field('', 0),
        detail: field(rest.replace(name, '').trim(), 0.3),
        postalCode,
        regionCode: '',
        candidates: [],
      };
    }
    // Distinct region readings among the best-scored results.
    const readings = new Map<string, AddressCandidate>();
    for (const result of results) {
      if (result.__parse < best.__parse) continue;
      if (!readings.has(result.code)) readings.set(result.code, { province: result.province, city: result.city, district: result.area, code: result.code, confidence: 0 });
    }
    const ambiguity = 1 / readings.size;
    // address-parse scores a match by how many levels were written out (higher is surer).
    const regionConfidence = Math.min(0.99, 0.55 + 0.09 * Math.max(0, best.__parse)) * ambiguity;
    const candidates = readings.size > 1 ? [...readings.values()].map((candidate) => ({ ...candidate, confidence: Math.round(regionConfidence * 100) / 100 })) : [];
    const written = (value: string) => (value && text.includes(value.replace(/(省|市|自治区|维吾尔|壮族|回族|特别行政区)+$/, '').slice(0, 2)) ? 1 : 0.85);
    const name = cleanName(best.name);
    const detail = best.details.replace(name, '').replace(/\s+/g, ' ').trim();
    return {
      name: field(name, NAME.test(name) ? 0.9 : 0.6),
      phone,
      province: field(best.province, regionConfidence * written(best.province)),
      city: field(best.city, regionConfidence * written(best.city)),
      district: field(best.area, regionConfidence * written(best.area)),
      detail: field(detail, Math.min(0.9, regionConfidence + 0.1)),
      postalCode: postalCode || best.zip_code || '',
      regionCode: best.code,
      candidates,
    };
  }
}

/**
 * The result without the region levels that the text names only inside street or building names
 * (中山路, 南京大厦), most specific first; null when no level it keeps is written in the text.
 * Municipalities are named in full at both levels (province and city `北京市`).
 */
function withoutRoadRegions(result: AddressParseResult, text: string): AddressParseResult | null {
  const levels: Array<['area' | 'city' | 'province', number]> = [
    ['area', 6],
    ['city', 4],
    ['province', 2],
  ];
  const next = { ...result };
  let dropped = false;
  for (const [level, digits] of levels) {
    const value = next[level];
    if (!value) continue;
    if (evidence(value, text) === 'text') break;
    // Read from a street name, or only inferred from such a level: not a reading of this text.
    next[level] = '';
    next.code = digits > 2 ? `${next.code.slice(0, digits - 2)}${'0'.repeat(8 - digits)}` : '';
    dropped = true;
  }
  if (!next.province && !next.city && !next.area) return null;
  if (dropped) next.details = stripRegions(text, [next.province, next.city, next.area]);
  const municipality = MUNICIPALITIES[next.code.slice(0, 2)];
  if (municipality) {
    next.province = municipality;
    if (next.city || next.area) next.city = municipality;
  }
  return next;
}

/** Where the text names a region: `text` (on its own), `road` (only inside a street's name), `absent`. */
function evidence(value: string, text: string): 'text' | 'road' | 'absent' {
  const stem = value.replace(REGION_SUFFIX, '');
  const name = stem.length >= 2 ? stem : value;
  let found: 'road' | 'absent' = 'absent';
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    let after = text.slice(at + name.length);
    if (after.startsWith(value.slice(name.length))) after = after.slice(value.length - name.length);
    // The full name (中山市) is always a region; the bare name followed by 路, 街, ... is a street.
    if (value.length > name.length && text.startsWith(value, at)) return 'text';
    if (!ROAD_SUFFIX.test(after)) return 'text';
    found = 'road';
  }
  return found;
}

/** The text without the names of the given regions (each where it stands on its own). */
function stripRegions(text: string, values: readonly string[]): string {
  let rest = text;
  for (const value of values) {
    if (!value) continue;
    const stem = value.replace(REGION_SUFFIX, '');
    const name = stem.length >= 2 ? stem : value;
    for (let at = rest.indexOf(name); at >= 0; at = rest.indexOf(name, at + 1)) {
      const full = rest.startsWith(value, at) ? value : name;
      if (full === value || !ROAD_SUFFIX.test(rest.slice(at + full.length))) {
        rest = `${rest.slice(0, at)}${rest.slice(at + full.length)}`;
        break;
      }
    }
  }
  return rest.replace(/\s+/g, ' ').trim();
}

/** The package sometimes leaves stray characters with the name; keep the one plausible name token. */
function cleanName(raw: string): string {
  const tokens = raw.split(/\s+/).filter(Boolean);
  return pickName(tokens) || (tokens[0] ?? '');
}

function pickName(tokens: readonly string[]): string {
  return tokens.find((token) => NAME.test(token) && !/(路|街|号|区|市|省|县|镇|村|楼|室|栋|大道|小区|园)$/.test(token)) ?? '';
}
