"""UDPipe 1 (ufal.udpipe): tokenizer, tagger and parser from one model file, and its trainer."""
