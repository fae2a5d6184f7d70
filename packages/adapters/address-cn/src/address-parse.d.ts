declare module 'address-parse' {
  export interface AddressParseResult {
    province: string;
    city: string;
    area: string;
    details: string;
    name: string;
    code: string;
    __type: string;
    __parse: number;
    mobile: string;
    zip_code: string;
    phone: string;
  }
  export const AREA: {
    province_list: Record<string, string>;
    city_list: Record<string, string>;
    area_list: Record<string, string>;
  };
  const AddressParse: { parse(address: string, all?: boolean): AddressParseResult[] };
  export default AddressParse;
}
