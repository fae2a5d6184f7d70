import { IsString, Length } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

@Schema({ name: 'AddressParseRequest' })
export class AddressBody {
  @IsString()
  @Length(1, 1000)
  @Doc({ description: 'Free text holding a Chinese address, a recipient and a phone number, in any order and punctuation.', example: '收货人：张伟，13812345678，广东省深圳市南山区科技园科苑路15号' })
  address!: string;
}
