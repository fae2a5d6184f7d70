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

const MOBILE = /(?<![\d])(?:\+?86[\s-]?)?(1[3-9]\d)[\s-]?(\d{4})[\s-]?(\d{4})(?![\d])/;
const LANDLINE = /(?<![\d])(?:\+?86[\s-]?)?[(（]?(0\d{2,3})[)）]?[\s-]?(\d{7,8})(?:[-转]\d{1,6})?(?![\d])/;
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
    rest = rest.replace(/[,，;；、|\n\r\t]+/g, ' ').replace(/\s+/g, ' ').trim();
    const results = rest ? addressParse.default.parse(rest, true) : [];
    const best = results[0];
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

/** The package sometimes leaves stray characters with the name; keep the one plausible name token. */
function cleanName(raw: string): string {
  const tokens = raw.split(/\s+/).filter(Boolean);
  return pickName(tokens) || (tokens[0] ?? '');
}

function pickName(tokens: readonly string[]): string {
  return tokens.find((token) => NAME.test(token) && !/(路|街|号|区|市|省|县|镇|村|楼|室|栋|大道|小区|园)$/.test(token)) ?? '';
}
