// The one place this module asks which database it talks to (the vector database's sniff).
export { dialectOf } from '../../tools/index.js';
