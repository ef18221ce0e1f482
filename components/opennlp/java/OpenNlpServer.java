import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import opennlp.tools.chunker.ChunkSampleStream;
import opennlp.tools.chunker.ChunkerFactory;
import opennlp.tools.chunker.ChunkerME;
import opennlp.tools.chunker.ChunkerModel;
import opennlp.tools.parser.AbstractBottomUpParser;
import opennlp.tools.parser.Parse;
import opennlp.tools.parser.ParseSampleStream;
import opennlp.tools.parser.Parser;
import opennlp.tools.parser.ParserFactory;
import opennlp.tools.parser.ParserModel;
import opennlp.tools.postag.POSModel;
import opennlp.tools.postag.POSTaggerFactory;
import opennlp.tools.postag.POSTaggerME;
import opennlp.tools.postag.WordTagSampleStream;
import opennlp.tools.sentdetect.SentenceDetectorFactory;
import opennlp.tools.sentdetect.SentenceDetectorME;
import opennlp.tools.sentdetect.SentenceModel;
import opennlp.tools.sentdetect.SentenceSampleStream;
import opennlp.tools.tokenize.TokenSampleStream;
import opennlp.tools.tokenize.TokenizerFactory;
import opennlp.tools.tokenize.TokenizerME;
import opennlp.tools.tokenize.TokenizerModel;
import opennlp.tools.util.MarkableFileInputStreamFactory;
import opennlp.tools.util.ObjectStream;
import opennlp.tools.util.PlainTextByLineStream;
import opennlp.tools.util.Span;
import opennlp.tools.util.TrainingParameters;
import opennlp.tools.util.model.BaseModel;

/**
 * casflow's OpenNLP server: one JVM per worker process, one JSON object per line on
 * stdin, one JSON answer per line on stdout ({"error": ...} on failure, the JVM goes on).
 *
 * <p>OpenNLP prints training progress on System.out, so the protocol keeps the real
 * stdout for itself and points System.out at stderr. Offsets are Java's (UTF-16 units);
 * the Python side converts them. Requests:
 * load {kind, path}; sentences/tokens {model, texts}; pos {model, sentences};
 * chunk {model, sentences, tags}; parse {model, sentences, beam}; train {kind, data,
 * output, language, params, head_rules}.
 */
public final class OpenNlpServer {
  private final Map<String, Object> tools = new HashMap<>();

  public static void main(String[] args) throws Exception {
    PrintWriter out = new PrintWriter(
        new OutputStreamWriter(new java.io.FileOutputStream(java.io.FileDescriptor.out),
            StandardCharsets.UTF_8), false);
    System.setOut(new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.err), true,
        "UTF-8"));
    watchParent();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    OpenNlpServer server = new OpenNlpServer();
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      String answer;
      try {
        @SuppressWarnings("unchecked")
        Map<String, Object> request = (Map<String, Object>) new Json(line).value();
        answer = Json.write(server.handle(request));
      } catch (Throwable e) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
        answer = Json.write(error);
      }
      out.println(answer);
      out.flush();
    }
  }

  /**
   * Ends the JVM when the Python process that started it is gone (killed with -9
   * included): a closed stdin is only seen between requests, and a training request can
   * run for an hour.
   */
  private static void watchParent() {
    long parent = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
    Thread watch = new Thread(() -> {
      while (true) {
        try {
          Thread.sleep(1000);
        } catch (InterruptedException e) {
          return;
        }
        long now = ProcessHandle.current().parent().map(ProcessHandle::pid).orElse(-1L);
        boolean alive = ProcessHandle.of(parent).map(ProcessHandle::isAlive).orElse(false);
        if (now != parent || !alive) {
          Runtime.getRuntime().halt(1);
        }
      }
    }, "casflow-parent-watch");
    watch.setDaemon(true);
    watch.start();
  }

  private Map<String, Object> handle(Map<String, Object> request) throws Exception {
    String op = (String) request.get("op");
    Map<String, Object> answer = new LinkedHashMap<>();
    switch (op) {
      case "load":
        load((String) request.get("kind"), (String) request.get("path"));
        answer.put("ok", true);
        return answer;
      case "sentences": {
        SentenceDetectorME detector = new SentenceDetectorME((SentenceModel) tool(request));
        List<Object> result = new ArrayList<>();
        for (Object text : (List<?>) request.get("texts")) {
          result.add(spans(detector.sentPosDetect((String) text)));
        }
        answer.put("spans", result);
        return answer;
      }
      case "tokens": {
        TokenizerME tokenizer = new TokenizerME((TokenizerModel) tool(request));
        List<Object> result = new ArrayList<>();
        for (Object text : (List<?>) request.get("texts")) {
          result.add(spans(tokenizer.tokenizePos((String) text)));
        }
        answer.put("spans", result);
        return answer;
      }
      case "pos": {
        POSTaggerME tagger = new POSTaggerME((POSModel) tool(request));
        List<Object> result = new ArrayList<>();
        for (Object sentence : (List<?>) request.get("sentences")) {
          result.add(List.of(tagger.tag(strings(sentence))));
        }
        answer.put("tags", result);
        return answer;
      }
      case "chunk": {
        ChunkerME chunker = new ChunkerME((ChunkerModel) tool(request));
        List<?> sentences = (List<?>) request.get("sentences");
        List<?> tags = (List<?>) request.get("tags");
        List<Object> result = new ArrayList<>();
        for (int i = 0; i < sentences.size(); i++) {
          result.add(List.of(chunker.chunk(strings(sentences.get(i)), strings(tags.get(i)))));
        }
        answer.put("chunks", result);
        return answer;
      }
      case "parse": {
        int beam = ((Number) request.getOrDefault("beam", AbstractBottomUpParser.defaultBeamSize))
            .intValue();
        Parser parser = ParserFactory.create((ParserModel) tool(request), beam,
            AbstractBottomUpParser.defaultAdvancePercentage);
        List<Object> result = new ArrayList<>();
        for (Object sentence : (List<?>) request.get("sentences")) {
          result.add(parse(parser, strings(sentence)));
        }
        answer.put("trees", result);
        return answer;
      }
      case "train":
        train(request);
        answer.put("ok", true);
        return answer;
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private Object tool(Map<String, Object> request) {
    Object model = tools.get((String) request.get("model"));
    if (model == null) {
      throw new IllegalStateException("model not loaded: " + request.get("model"));
    }
    return model;
  }

  private void load(String kind, String path) throws Exception {
    if (tools.containsKey(path)) {
      return;
    }
    File file = new File(path);
    BaseModel model;
    switch (kind) {
      case "sentences": model = new SentenceModel(file); break;
      case "tokens": model = new TokenizerModel(file); break;
      case "pos": model = new POSModel(file); break;
      case "chunks": model = new ChunkerModel(file); break;
      case "constituents": model = new ParserModel(file); break;
      default: throw new IllegalArgumentException("unknown model kind " + kind);
    }
    tools.put(path, model);
  }

  private static List<Object> spans(Span[] spans) {
    List<Object> result = new ArrayList<>();
    for (Span span : spans) {
      result.add(List.of(span.getStart(), span.getEnd()));
    }
    return result;
  }

  private static String[] strings(Object list) {
    List<?> items = (List<?>) list;
    String[] result = new String[items.size()];
    for (int i = 0; i < result.length; i++) {
      result[i] = (String) items.get(i);
    }
    return result;
  }

  /** The best parse of one tokenized sentence, leaves written as token indices; null if none. */
  private static String parse(Parser parser, String[] tokens) {
    StringBuilder text = new StringBuilder();
    Map<Integer, Integer> indexByStart = new HashMap<>();
    for (int i = 0; i < tokens.length; i++) {
      if (i > 0) {
        text.append(' ');
      }
      indexByStart.put(text.length(), i);
      text.append(tokens[i]);
    }
    String sentence = text.toString();
    Parse top = new Parse(sentence, new Span(0, sentence.length()), AbstractBottomUpParser.INC_NODE,
        0, 0);
    int start = 0;
    for (int i = 0; i < tokens.length; i++) {
      top.insert(new Parse(sentence, new Span(start, start + tokens[i].length()),
          AbstractBottomUpParser.TOK_NODE, 0, i));
      start += tokens[i].length() + 1;
    }
    Parse parsed = parser.parse(top);
    if (parsed == null || parsed.getChildCount() == 0) {
      return null;
    }
    StringBuilder out = new StringBuilder();
    write(parsed, indexByStart, out);
    return out.toString();
  }

  private static void write(Parse node, Map<Integer, Integer> indexByStart, StringBuilder out) {
    if (node.getType().equals(AbstractBottomUpParser.TOK_NODE)) {
      out.append(indexByStart.get(node.getSpan().getStart()));
      return;
    }
    out.append('(').append(node.getType());
    for (Parse child : node.getChildren()) {
      out.append(' ');
      write(child, indexByStart, out);
    }
    out.append(')');
  }

  private static void train(Map<String, Object> request) throws Exception {
    String kind = (String) request.get("kind");
    String language = (String) request.get("language");
    File data = new File((String) request.get("data"));
    File output = new File((String) request.get("output"));
    TrainingParameters params = new TrainingParameters();
    @SuppressWarnings("unchecked")
    Map<String, Object> given = (Map<String, Object>) request.get("params");
    for (Map.Entry<String, Object> entry : given.entrySet()) {
      params.put(entry.getKey(), String.valueOf(entry.getValue()));
    }
    MarkableFileInputStreamFactory input = new MarkableFileInputStreamFactory(data);
    BaseModel model;
    try (ObjectStream<String> lines = new PlainTextByLineStream(input, StandardCharsets.UTF_8)) {
      switch (kind) {
        case "sentences":
          model = SentenceDetectorME.train(language, new SentenceSampleStream(lines),
              new SentenceDetectorFactory(language, true, null, null), params);
          break;
        case "tokens":
          model = TokenizerME.train(new TokenSampleStream(lines),
              new TokenizerFactory(language, null, false, null), params);
          break;
        case "pos":
          model = POSTaggerME.train(language, new WordTagSampleStream(lines), params,
              new POSTaggerFactory());
          break;
        case "chunks":
          model = ChunkerME.train(language, new ChunkSampleStream(lines), params,
              new ChunkerFactory());
          break;
        case "constituents": {
          String rules = new String(Files.readAllBytes(new File(
              (String) request.get("head_rules")).toPath()), StandardCharsets.UTF_8);
          model = opennlp.tools.parser.chunking.Parser.train(language,
              new ParseSampleStream(lines),
              new opennlp.tools.parser.lang.en.HeadRules(new StringReader(rules)), params);
          break;
        }
        default:
          throw new IllegalArgumentException("unknown model kind " + kind);
      }
    }
    File partial = new File(output.getPath() + ".partial");
    model.serialize(partial);
    Files.move(partial.toPath(), output.toPath(),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }
}
