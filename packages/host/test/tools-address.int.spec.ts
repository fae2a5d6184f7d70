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
