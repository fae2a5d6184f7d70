import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// POST /tool/home/address through the host's default parser (@trellis/address-cn), on both
// transports and both databases.
describe.each(testDatabases())('tool service address parsing on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let token: string;
    beforeAll(async () => {
      t = await startTestHost(db, transport);
      token = (await t.register()).token;
    });
    afterAll(() => t?.close());

    const parse = (address: unknown, bearer: string | undefined = token) => t.request('POST', '/tool/home/address', { token: bearer, body: { address } });

    it('recognises every field with a confidence, in any order', async () => {
      const r = await parse('收货人：张伟，+86 138-1234-5678，广东省深圳市南山区科技园科苑路15号');
      expect(r.status, r.text).toBe(200);
      expect(r.body).toMatchObject({
        name: { value: '张伟' },
        phone: { value: '13812345678', kind: 'mobile' },
        province: { value: '广东省' },
        city: { value: '深圳市' },
        district: { value: '南山区' },
        detail: { value: '科技园科苑路15号' },
        regionCode: '440305',
        candidates: [],
      });
      for (const key of ['name', 'phone', 'province', 'city', 'district', 'detail']) expect(r.body[key].confidence, key).toBeGreaterThan(0.5);
      const reversed = await parse('北京市朝阳区建国路88号 010-12345678 李娜');
      expect(reversed.body).toMatchObject({ name: { value: '李娜' }, phone: { value: '010-12345678', kind: 'landline' }, city: { value: '北京市' }, district: { value: '朝阳区' }, detail: { value: '建国路88号' } });
    });

    it('answers candidates when the region is ambiguous', async () => {
      const r = await parse('鼓楼区中山路1号 陈七 13900001111');
      expect(r.status).toBe(200);
      expect(r.body.candidates.length).toBeGreaterThan(1);
      expect(r.body.district.confidence).toBeLessThan(0.5);
    });

    it('takes the country code out with the phone, in brackets or not, and never leaves it in the detail', async () => {
      for (const address of ['广东省深圳市南山区科技园科苑路15号 张伟 (+86)13812345678', '深圳市南山区科技园科苑路15号，张伟，（+86） 138 1234 5678', '张伟 0086 138-1234-5678 深圳市南山区科技园科苑路15号']) {
        const r = await parse(address);
        expect(r.body, address).toMatchObject({ name: { value: '张伟' }, phone: { value: '13812345678', kind: 'mobile' }, district: { value: '南山区' }, detail: { value: '科技园科苑路15号' } });
      }
      const leftOver = await parse('北京市朝阳区建国路88号 李娜 (+86)');
      expect(leftOver.body).toMatchObject({ name: { value: '李娜' }, detail: { value: '建国路88号' } });
    });

    it('does not read regions out of street names', async () => {
      // 中山路 names a street, not 中山市 or a 中山区.
      const street = await parse('中山路10号 王五 13912345678');
      expect(street.body).toMatchObject({ name: { value: '王五' }, province: { value: '' }, city: { value: '' }, district: { value: '' }, detail: { value: '中山路10号' }, regionCode: '', candidates: [] });
      const cityThenStreet = await parse('大连市中山路5号 李四 13800005555');
      expect(cityThenStreet.body).toMatchObject({ province: { value: '辽宁省' }, city: { value: '大连市' }, district: { value: '' }, detail: { value: '中山路5号' }, regionCode: '210200', candidates: [] });
      const streetThenCity = await parse('张三 13800004444 中山路1号 南京市');
      expect(streetThenCity.body).toMatchObject({ province: { value: '江苏省' }, city: { value: '南京市' }, detail: { value: '中山路1号' }, candidates: [] });
      // The region itself, written out, still counts.
      const region = await parse('广东省中山市石岐区中山路1号 王五');
      expect(region.body).toMatchObject({ province: { value: '广东省' }, city: { value: '中山市' } });
      expect(region.body.detail.value).toContain('中山路1号');
    });

    it('names a municipality in full as both province and city', async () => {
      for (const [address, name, code] of [
        ['北京朝阳区建国路88号 李娜', '北京市', '110105'],
        ['天津市和平区南京路5号 孙八', '天津市', '120101'],
        ['上海浦东新区张江路1号 周九', '上海市', '310115'],
        ['重庆市渝中区解放碑1号 钱七', '重庆市', '500103'],
      ]) {
        const r = await parse(address);
        expect([r.body.province.value, r.body.city.value, r.body.regionCode], address).toEqual([name, name, code]);
      }
    });

    it('answers 400 for a missing, empty or too long address and 401 without a token', async () => {
      for (const address of [undefined, '', 5, 'x'.repeat(1001)]) {
        const r = await parse(address);
        expect([r.status, r.body.error], String(address)).toEqual([400, 'validation_failed']);
      }
      expect((await parse('北京市朝阳区', '')).status).toBe(401);
      const anonymous = await t.request('POST', '/tool/home/oauth/anonymous', { body: { anonymous: `addr-${transport}-${Date.now()}`, passwd: 'a long secret' } });
      expect((await parse('北京市朝阳区', anonymous.body.access_token)).status).toBe(200);
    });
  });
});
