import type { ServiceIdentifier } from 'inversify';

/** One recognised field and how sure the parser is of it (0 to 1; 0 with an empty value when absent). */
export interface ParsedAddressField {
  value: string;
  confidence: number;
}

/** A reading of the region part: province, city and district, with the region's code. */
export interface AddressCandidate {
  province: string;
  city: string;
  district: string;
  /** Administrative division code of the most specific level found (GB/T 2260), or '' when none. */
  code: string;
  confidence: number;
}

export interface ParsedAddress {
  name: ParsedAddressField;
  /** Digits only (mobile numbers without a country code; landlines with their area code and a `-`). */
  phone: ParsedAddressField & { kind: 'mobile' | 'landline' | '' };
  province: ParsedAddressField;
  city: ParsedAddressField;
  district: ParsedAddressField;
  detail: ParsedAddressField;
  postalCode: string;
  regionCode: string;
  /** The other readings when the region is ambiguous (for example a district name that exists in several cities), best first; empty otherwise. */
  candidates: AddressCandidate[];
}

/**
 * Recognises recipient name, phone number, province, city, district and detailed address in free
 * Chinese text, in any order and punctuation, offline. The host binds `@trellis/address-cn`
 * (region data of the `address-parse` package); without a parser the route answers 503
 * `address_parser_not_configured`.
 */
export interface AddressParser {
  readonly name: string;
  parse(text: string): Promise<ParsedAddress>;
}

export const addressParserServiceIdentifier: ServiceIdentifier<AddressParser> = Symbol.for('@trellis/core/AddressParser');
