import { IsString, Length } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';

@Schema({ name: 'SpeechRequest' })
export class SpeechBody {
  @IsString()
  @Length(1, 64)
  @Doc({ description: 'The conversation id.' })
  convId!: string;

  @IsString()
  @Length(1, 64)
  @Doc({ description: 'The id of a message of that conversation.' })
  msgId!: string;
}
