// Loads XMI files into an Apache UIMA Java 2.10 CAS and prints what each view holds.
//
// Usage:
//   java -cp <classes>:<uimaj-core.jar> XmiTypeCounts [--spans] TYPESYSTEM.xml XMI... 
//   java -cp <classes>:<uimaj-core.jar> XmiTypeCounts [--spans] TYPESYSTEM.xml --files-from FILE|-
//
// Every XMI is deserialized strictly (lenient=false), so a type or feature that the type
// system does not declare fails the document. One JVM checks many documents because JVM
// start-up dominates the cost; the CAS is reset between documents.
//
// Output: tab-separated lines, one block per document, in this order:
//   doc        <xmi>
//   sofa       <xmi> <view> <utf16 length> <code points> <sha256 of the UTF-8 text>   ("-" when no text)
//   annotation <xmi> <view> <type> <count>          FSs in the view's annotation index
//   indexed    <xmi> <view> <type> <count>          every FS in the view's index repository
//   span       <xmi> <view> <type> <begin16> <end16> <beginCp> <endCp>   (only with --spans)
//   problem    <xmi> <view> <type> <begin16> <end16> <what is wrong>
//   ok         <xmi>                                 or
//   error      <xmi> <exception class>: <message>    (stack trace on stderr)
// Lines of one kind are sorted by view, type, then offsets. Java offsets count UTF-16 units;
// the code point columns are what Python (and dkpro-cassis) use for the same positions.
//
// Exit status: 0 all documents loaded, 1 at least one failed, 2 bad usage or type system.

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.uima.UIMAFramework;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.FSIterator;
import org.apache.uima.cas.FeatureStructure;
import org.apache.uima.cas.Type;
import org.apache.uima.cas.impl.XmiCasDeserializer;
import org.apache.uima.cas.text.AnnotationFS;
import org.apache.uima.resource.metadata.TypeSystemDescription;
import org.apache.uima.util.CasCreationUtils;
import org.apache.uima.util.XMLInputSource;

public final class XmiTypeCounts {

  private XmiTypeCounts() {}

  public static void main(String[] args) throws Exception {
    PrintStream out = new PrintStream(System.out, false, "UTF-8");
    boolean spans = false;
    String typeSystemPath = null;
    List<String> xmiPaths = new ArrayList<>();
    for (int i = 0; i < args.length; i++) {
      String arg = args[i];
      if (arg.equals("--spans")) {
        spans = true;
      } else if (arg.equals("--files-from") && i + 1 < args.length) {
        xmiPaths.addAll(readPathList(args[++i]));
      } else if (typeSystemPath == null) {
        typeSystemPath = arg;
      } else {
        xmiPaths.add(arg);
      }
    }
    if (typeSystemPath == null || xmiPaths.isEmpty()) {
      System.err.println(
          "usage: XmiTypeCounts [--spans] TYPESYSTEM.xml (XMI... | --files-from FILE|-)");
      System.exit(2);
    }

    CAS cas;
    try {
      TypeSystemDescription tsd =
          UIMAFramework.getXMLParser()
              .parseTypeSystemDescription(new XMLInputSource(typeSystemPath));
      cas = CasCreationUtils.createCas(tsd, null, null);
    } catch (Exception e) {
      System.err.println("cannot build a CAS from type system " + typeSystemPath + ": " + e);
      e.printStackTrace();
      System.exit(2);
      return;
    }

    int failures = 0;
    for (String xmiPath : xmiPaths) {
      cas.reset();
      out.println("doc\t" + xmiPath);
      List<String> report;
      try (InputStream in = new FileInputStream(xmiPath)) {
        XmiCasDeserializer.deserialize(in, cas, false);
        report = describe(cas, xmiPath, spans);
      } catch (Exception | Error e) {
        failures++;
        out.println("error\t" + xmiPath + "\t" + oneLine(e.getClass().getName() + ": " + e.getMessage()));
        out.flush();
        System.err.println("failed to load " + xmiPath + ":");
        e.printStackTrace();
        continue;
      }
      for (String line : report) {
        out.println(line);
      }
      out.println("ok\t" + xmiPath);
      out.flush();
    }
    out.flush();
    System.exit(failures == 0 ? 0 : 1);
  }

  private static List<String> readPathList(String source) throws IOException {
    List<String> paths = new ArrayList<>();
    BufferedReader reader =
        source.equals("-")
            ? new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))
            : Files.newBufferedReader(Paths.get(source), StandardCharsets.UTF_8);
    try {
      String line;
      while ((line = reader.readLine()) != null) {
        if (!line.isEmpty()) {
          paths.add(line);
        }
      }
    } finally {
      if (!source.equals("-")) {
        reader.close();
      }
    }
    return paths;
  }

  private static List<String> describe(CAS cas, String xmiPath, boolean spans)
      throws NoSuchAlgorithmException {
    // view name -> lines; TreeMaps keep the output order independent of index order.
    TreeMap<String, String> sofaLines = new TreeMap<>();
    TreeMap<String, TreeMap<String, Integer>> annotationCounts = new TreeMap<>();
    TreeMap<String, TreeMap<String, Integer>> indexedCounts = new TreeMap<>();
    List<Span> spanList = new ArrayList<>();
    List<Span> problems = new ArrayList<>();

    Iterator<CAS> views = cas.getViewIterator();
    while (views.hasNext()) {
      CAS view = views.next();
      String viewName = view.getViewName();
      String text = view.getDocumentText();
      sofaLines.put(viewName, sofaLine(xmiPath, viewName, text));
      int[] codePointAt = text == null ? null : codePointIndex(text);

      TreeMap<String, Integer> annotations = new TreeMap<>();
      for (AnnotationFS annotation : view.getAnnotationIndex()) {
        String typeName = annotation.getType().getName();
        annotations.merge(typeName, 1, Integer::sum);
        int begin = annotation.getBegin();
        int end = annotation.getEnd();
        String problem = offsetProblem(text, begin, end);
        if (problem != null) {
          problems.add(new Span(viewName, typeName, begin, end, -1, -1, problem));
        } else if (spans) {
          spanList.add(
              new Span(viewName, typeName, begin, end, codePointAt[begin], codePointAt[end], null));
        }
      }
      annotationCounts.put(viewName, annotations);

      indexedCounts.put(viewName, countIndexedByExactType(view));
    }

    List<String> lines = new ArrayList<>(sofaLines.values());
    addCountLines(lines, "annotation", xmiPath, annotationCounts);
    addCountLines(lines, "indexed", xmiPath, indexedCounts);
    spanList.sort(null);
    for (Span span : spanList) {
      lines.add(
          String.join(
              "\t",
              "span",
              xmiPath,
              span.view,
              span.type,
              Integer.toString(span.begin),
              Integer.toString(span.end),
              Integer.toString(span.beginCp),
              Integer.toString(span.endCp)));
    }
    problems.sort(null);
    for (Span problem : problems) {
      lines.add(
          String.join(
              "\t",
              "problem",
              xmiPath,
              problem.view,
              problem.type,
              Integer.toString(problem.begin),
              Integer.toString(problem.end),
              problem.problem));
    }
    return lines;
  }

  /**
   * Counts every FS in the view's index repository by its exact type.
   *
   * <p>UIMA 2.10's getAllIndexedFS(TOP) skips array types (an indexed FSArray is returned by
   * getAllIndexedFS(FSArray) but not by getAllIndexedFS(TOP)), so each type is asked for its
   * own instances instead; getAllIndexedFS returns each FS once even when several indexes hold
   * it.
   */
  private static TreeMap<String, Integer> countIndexedByExactType(CAS view) {
    TreeMap<String, Integer> counts = new TreeMap<>();
    Iterator<Type> types = view.getTypeSystem().getTypeIterator();
    while (types.hasNext()) {
      Type type = types.next();
      int count = 0;
      FSIterator<FeatureStructure> instances = view.getIndexRepository().getAllIndexedFS(type);
      while (instances.hasNext()) {
        if (instances.next().getType().equals(type)) {
          count++;
        }
      }
      if (count > 0) {
        counts.put(type.getName(), count);
      }
    }
    return counts;
  }

  private static String sofaLine(String xmiPath, String viewName, String text)
      throws NoSuchAlgorithmException {
    if (text == null) {
      return String.join("\t", "sofa", xmiPath, viewName, "-", "-", "-");
    }
    return String.join(
        "\t",
        "sofa",
        xmiPath,
        viewName,
        Integer.toString(text.length()),
        Integer.toString(text.codePointCount(0, text.length())),
        sha256Hex(text));
  }

  /** For each UTF-16 index 0..length, the number of code points before it. */
  private static int[] codePointIndex(String text) {
    int[] index = new int[text.length() + 1];
    int codePoints = 0;
    for (int i = 0; i < text.length(); i++) {
      index[i] = codePoints;
      // The low half of a surrogate pair does not start a new code point.
      if (!(Character.isLowSurrogate(text.charAt(i))
          && i > 0
          && Character.isHighSurrogate(text.charAt(i - 1)))) {
        codePoints++;
      }
    }
    index[text.length()] = codePoints;
    return index;
  }

  private static String offsetProblem(String text, int begin, int end) {
    if (text == null) {
      return "annotation in a view without sofa text";
    }
    if (begin < 0 || end < begin || end > text.length()) {
      return "offsets outside the sofa text of " + text.length() + " UTF-16 units";
    }
    if (splitsSurrogatePair(text, begin) || splitsSurrogatePair(text, end)) {
      return "offset falls inside a surrogate pair (code point vs UTF-16 offset mix-up)";
    }
    return null;
  }

  private static boolean splitsSurrogatePair(String text, int offset) {
    return offset > 0
        && offset < text.length()
        && Character.isHighSurrogate(text.charAt(offset - 1))
        && Character.isLowSurrogate(text.charAt(offset));
  }

  private static void addCountLines(
      List<String> lines,
      String kind,
      String xmiPath,
      TreeMap<String, TreeMap<String, Integer>> counts) {
    for (Map.Entry<String, TreeMap<String, Integer>> view : counts.entrySet()) {
      for (Map.Entry<String, Integer> type : view.getValue().entrySet()) {
        lines.add(
            String.join(
                "\t", kind, xmiPath, view.getKey(), type.getKey(), type.getValue().toString()));
      }
    }
  }

  private static String sha256Hex(String text) throws NoSuchAlgorithmException {
    byte[] digest =
        MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    StringBuilder hex = new StringBuilder(digest.length * 2);
    for (byte b : digest) {
      hex.append(String.format("%02x", b & 0xff));
    }
    return hex.toString();
  }

  private static String oneLine(String message) {
    return message.replace('\t', ' ').replace('\r', ' ').replace('\n', ' ');
  }

  private static final class Span implements Comparable<Span> {
    final String view;
    final String type;
    final int begin;
    final int end;
    final int beginCp;
    final int endCp;
    final String problem;

    Span(String view, String type, int begin, int end, int beginCp, int endCp, String problem) {
      this.view = view;
      this.type = type;
      this.begin = begin;
      this.end = end;
      this.beginCp = beginCp;
      this.endCp = endCp;
      this.problem = problem;
    }

    @Override
    public int compareTo(Span other) {
      int byView = view.compareTo(other.view);
      if (byView != 0) {
        return byView;
      }
      int byType = type.compareTo(other.type);
      if (byType != 0) {
        return byType;
      }
      int byBegin = Integer.compare(begin, other.begin);
      return byBegin != 0 ? byBegin : Integer.compare(end, other.end);
    }
  }
}
