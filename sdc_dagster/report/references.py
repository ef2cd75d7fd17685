"""The published sources the release report cites: each method and measure by the paper or manual
it comes from, in the short form "(Hundepool et al. 2012, §3.3)", and the full entries of the
report's references section.

A measure of :mod:`~sdc_dagster.report.measures` carries the section of the project's formula
notes that implements it (``Measure.spec``); :func:`measure_citations` turns that section into the
published sources a reader can look up (the notes restate those sources and are not published).
"""

from __future__ import annotations

import html
import re
import unicodedata

#: Full entries of the references, by the short form the text cites them with.
REFERENCES: dict[str, str] = {
    "Chen & Keller-McNulty 1998": (
        "Chen, G. & Keller-McNulty, S. (1998). Estimation of identification disclosure risk in microdata. "
        "Journal of Official Statistics, 14(1), 79–95."),
    "Cramér 1946": "Cramér, H. (1946). Mathematical Methods of Statistics. Princeton: Princeton University Press.",
    "Croux & Ruiz-Gazen 2005": (
        "Croux, C. & Ruiz-Gazen, A. (2005). High breakdown estimators for principal components: the "
        "projection-pursuit approach revisited. Journal of Multivariate Analysis, 95(1), 206–226."),
    "Dankar et al. 2012": (
        "Dankar, F. K., El Emam, K., Neisa, A. & Roffey, T. (2012). Estimating the re-identification risk of "
        "clinical data sets. BMC Medical Informatics and Decision Making, 12, 66."),
    "Defays & Nanopoulos 1993": (
        "Defays, D. & Nanopoulos, P. (1993). Panels of enterprises and confidentiality: the small aggregates "
        "method. Proceedings of the 1992 Symposium on Design and Analysis of Longitudinal Surveys, 195–204. "
        "Ottawa: Statistics Canada."),
    "Domingo-Ferrer & Mateo-Sanz 2002": (
        "Domingo-Ferrer, J. & Mateo-Sanz, J. M. (2002). Practical data-oriented microaggregation for "
        "statistical disclosure control. IEEE Transactions on Knowledge and Data Engineering, 14(1), 189–201."),
    "Domingo-Ferrer, Mateo-Sanz & Torra 2001": (
        "Domingo-Ferrer, J., Mateo-Sanz, J. M. & Torra, V. (2001). Comparing SDC methods for microdata on the "
        "basis of information loss and disclosure risk. Pre-proceedings of ETK-NTTS 2001, Eurostat, 807–826."),
    "Domingo-Ferrer & Torra 2001": (
        "Domingo-Ferrer, J. & Torra, V. (2001). A quantitative comparison of disclosure control methods for "
        "microdata. In P. Doyle, J. Lane, J. Theeuwes & L. Zayatz (eds.), Confidentiality, Disclosure and Data "
        "Access: Theory and Practical Applications for Statistical Agencies, 111–133. Amsterdam: North-Holland."),
    "Elliot, Manning & Ford 2002": (
        "Elliot, M. J., Manning, A. M. & Ford, R. W. (2002). A computational algorithm for handling the special "
        "uniques problem. International Journal of Uncertainty, Fuzziness and Knowledge-Based Systems, 10(5), "
        "493–509."),
    "Franconi & Polettini 2004": (
        "Franconi, L. & Polettini, S. (2004). Individual risk estimation in μ-Argus: a review. In J. Domingo-Ferrer "
        "& V. Torra (eds.), Privacy in Statistical Databases, Lecture Notes in Computer Science 3050, 262–272. "
        "Berlin: Springer."),
    "Gouweleeuw et al. 1998": (
        "Gouweleeuw, J. M., Kooiman, P., Willenborg, L. C. R. J. & de Wolf, P.-P. (1998). Post randomisation for "
        "statistical disclosure control: theory and implementation. Journal of Official Statistics, 14(4), "
        "463–478."),
    "Gower 1971": ("Gower, J. C. (1971). A general coefficient of similarity and some of its properties. "
                   "Biometrics, 27(4), 857–871."),
    "Haas & Stokes 1998": (
        "Haas, P. J. & Stokes, L. (1998). Estimating the number of classes in a finite population. Journal of "
        "the American Statistical Association, 93(444), 1475–1487."),
    "Hoshino 2001": (
        "Hoshino, N. (2001). Applying Pitman's sampling formula to microdata disclosure risk assessment. "
        "Journal of Official Statistics, 17(4), 499–520."),
    "Hundepool et al. 2012": (
        "Hundepool, A., Domingo-Ferrer, J., Franconi, L., Giessing, S., Schulte Nordholt, E., Spicer, K. & "
        "de Wolf, P.-P. (2012). Statistical Disclosure Control. Wiley Series in Survey Methodology. "
        "Chichester: Wiley."),
    "Hwang & Yoon 1981": (
        "Hwang, C.-L. & Yoon, K. (1981). Multiple Attribute Decision Making: Methods and Applications. Lecture "
        "Notes in Economics and Mathematical Systems 186. Berlin: Springer."),
    "Kooiman, Willenborg & Gouweleeuw 1997": (
        "Kooiman, P., Willenborg, L. & Gouweleeuw, J. (1997). PRAM: a method for disclosure limitation of "
        "microdata. Research paper 9705. Voorburg: Statistics Netherlands."),
    "Li, Li & Venkatasubramanian 2007": (
        "Li, N., Li, T. & Venkatasubramanian, S. (2007). t-Closeness: privacy beyond k-anonymity and "
        "l-diversity. Proceedings of the 23rd IEEE International Conference on Data Engineering, 106–115."),
    "Machanavajjhala et al. 2007": (
        "Machanavajjhala, A., Kifer, D., Gehrke, J. & Venkitasubramaniam, M. (2007). l-Diversity: privacy beyond "
        "k-anonymity. ACM Transactions on Knowledge Discovery from Data, 1(1), article 3."),
    "Manning, Haglin & Keane 2008": (
        "Manning, A. M., Haglin, D. J. & Keane, J. A. (2008). A recursive search algorithm for statistical "
        "disclosure assessment. Data Mining and Knowledge Discovery, 16(2), 165–196."),
    "Mateo-Sanz, Sebé & Domingo-Ferrer 2004": (
        "Mateo-Sanz, J. M., Sebé, F. & Domingo-Ferrer, J. (2004). Outlier protection in continuous microdata "
        "masking. In J. Domingo-Ferrer & V. Torra (eds.), Privacy in Statistical Databases, Lecture Notes in "
        "Computer Science 3050, 201–215. Berlin: Springer."),
    "Młodak 2019": (
        "Młodak, A. (2019). Wykorzystanie miernika kompleksowego w ocenie straty informacji na skutek kontroli "
        "ujawniania mikrodanych [Using a complex measure to assess the information loss due to the disclosure "
        "control of microdata]. Przegląd Statystyczny (Statistical Review), 66(1), 7–26. "
        "doi:10.5604/01.3001.0013.8285."),
    "Młodak 2020": (
        "Młodak, A. (2020). Information loss resulting from statistical disclosure control of output data. "
        "Wiadomości Statystyczne. The Polish Statistician, 65(9), 7–27. doi:10.5604/01.3001.0014.4121."),
    "Młodak 2025": (
        "Młodak, A. (2025). A method of complex disclosure risk assessment for microdata. Journal of Probability "
        "and Statistics, 2025, article 1876232. doi:10.1155/jpas/1876232."),
    "Nowak & Radzik 1994": (
        "Nowak, A. S. & Radzik, T. (1994). A solidarity value for n-person transferable utility games. "
        "International Journal of Game Theory, 23(1), 43–48."),
    "Rousseeuw & Van Driessen 1999": (
        "Rousseeuw, P. J. & Van Driessen, K. (1999). A fast algorithm for the minimum covariance determinant "
        "estimator. Technometrics, 41(3), 212–223."),
    "sdcMicro reference manual": (
        "Templ, M., Meindl, B., Kowarik, A. et al. sdcMicro: Statistical Disclosure Control Methods for "
        "Anonymization of Data and Risk Estimation. R package reference manual, version 5.8.1. CRAN."),
    "Shapley 1953": (
        "Shapley, L. S. (1953). A value for n-person games. In H. W. Kuhn & A. W. Tucker (eds.), Contributions to "
        "the Theory of Games II, Annals of Mathematics Studies 28, 307–317. Princeton: Princeton University Press."),
    "Shlomo & Young 2006": (
        "Shlomo, N. & Young, C. (2006). Statistical disclosure control methods through a risk-utility framework. "
        "In J. Domingo-Ferrer & L. Franconi (eds.), Privacy in Statistical Databases, Lecture Notes in Computer "
        "Science 4302, 68–81. Berlin: Springer."),
    "Skinner & Shlomo 2008": (
        "Skinner, C. J. & Shlomo, N. (2008). Assessing identification risk in survey microdata using log-linear "
        "models. Journal of the American Statistical Association, 103(483), 989–1001."),
    "Sweeney 2002": (
        "Sweeney, L. (2002). k-anonymity: a model for protecting privacy. International Journal of Uncertainty, "
        "Fuzziness and Knowledge-Based Systems, 10(5), 557–570."),
    "Templ & Meindl 2008": (
        "Templ, M. & Meindl, B. (2008). Robust statistics meets SDC: new disclosure risk measures for continuous "
        "microdata masking. In J. Domingo-Ferrer & Y. Saygın (eds.), Privacy in Statistical Databases, Lecture "
        "Notes in Computer Science 5262, 113–126. Berlin: Springer."),
    "Templ 2008": (
        "Templ, M. (2008). Statistical disclosure control for microdata using the R-package sdcMicro. "
        "Transactions on Data Privacy, 1(2), 67–85."),
    "Templ, Kowarik & Meindl 2015": (
        "Templ, M., Kowarik, A. & Meindl, B. (2015). Statistical disclosure control for micro-data using the R "
        "package sdcMicro. Journal of Statistical Software, 67(4), 1–36. doi:10.18637/jss.v067.i04."),
    "Zayatz 1991": (
        "Zayatz, L. V. (1991). Estimation of the percent of unique population elements on a microdata file using "
        "the sample. Statistical Research Division Report RR-91/08. Washington: US Bureau of the Census."),
}

_RISK = ("Hundepool et al. 2012", "§3.3")
_METHODS = ("Hundepool et al. 2012", "§3.4")
_LOSS = ("Hundepool et al. 2012", "§3.5")
_SDCMICRO = ("Templ, Kowarik & Meindl 2015", "")

#: The published sources of each section of the formula notes the measures name (``Measure.spec``),
#: most specific first: ``(short form, where in it)``.
SECTION_SOURCES: dict[str, tuple[tuple[str, str], ...]] = {
    "2": (_RISK, _SDCMICRO),
    "3.1": (("Sweeney 2002", ""), _RISK, _SDCMICRO),
    "3.2": (("Franconi & Polettini 2004", ""), _RISK, _SDCMICRO),
    "3.3": (("Franconi & Polettini 2004", ""), _RISK, _SDCMICRO),
    "3.5": (_RISK, _SDCMICRO),
    "3.6": (("Machanavajjhala et al. 2007", ""), _SDCMICRO),
    "3.7": (("Li, Li & Venkatasubramanian 2007", ""),),
    "3.8": (("Elliot, Manning & Ford 2002", ""), ("Manning, Haglin & Keane 2008", ""), _SDCMICRO),
    "3.9": (("Skinner & Shlomo 2008", ""), _SDCMICRO),
    "3.10": (_RISK,),
    "4.1": (("Domingo-Ferrer & Torra 2001", ""), ("Gower 1971", ""), _RISK),
    "4.2": (("Mateo-Sanz, Sebé & Domingo-Ferrer 2004", ""), ("Templ & Meindl 2008", ""), _SDCMICRO),
    "4.5": (("Domingo-Ferrer, Mateo-Sanz & Torra 2001", ""),),
    "5": (("Młodak 2025", ""),),
    "6": (("Młodak 2025", ""), ("Shapley 1953", ""), ("Nowak & Radzik 1994", "")),
    "8.1": (_METHODS,),
    "8.2": (_METHODS,),
    "8.3": (_METHODS, ("Templ, Kowarik & Meindl 2015", "§3.3")),
    "8.4": (_METHODS,),
    "8.6": (("Domingo-Ferrer & Mateo-Sanz 2002", ""), _METHODS),
    "8.8": (("Gouweleeuw et al. 1998", ""), _METHODS),
    "9.1": (("Młodak 2020", ""),),
    "9.3": (("Młodak 2020", ""),),
    "9.4": (("Domingo-Ferrer, Mateo-Sanz & Torra 2001", ""), ("Mateo-Sanz, Sebé & Domingo-Ferrer 2004", ""),
            ("Młodak 2020", ""), _LOSS),
    "9.5": (("Domingo-Ferrer & Mateo-Sanz 2002", ""), _LOSS),
    "9.6": (("Domingo-Ferrer, Mateo-Sanz & Torra 2001", ""), ("Młodak 2020", ""), _LOSS),
    "9.7": (("Młodak 2020", ""),),
    "9.8": (("Kooiman, Willenborg & Gouweleeuw 1997", ""), ("Młodak 2020", "")),
    "9.9": (("Młodak 2020", ""), ("Cramér 1946", "")),
    "9.11": (("Shlomo & Young 2006", ""), ("Młodak 2020", "")),
    "10": (("Młodak 2019", ""), ("Hwang & Yoon 1981", "")),
}

#: Where the sdcMicro implementation of a measure is cited besides its paper (``"(sdcMicro)"`` in ``Measure.spec``).
_SDCMICRO_MANUAL = ("sdcMicro reference manual", "dUtility")
#: The papers of ARX's population-uniqueness models, cited for a measure whose ``Measure.spec`` says
#: ``"(ARX)"``: Dankar et al.'s rule and the Pitman, Zayatz and SNB models it chooses among.
_ARX_POPULATION_UNIQUENESS = (("Dankar et al. 2012", ""), ("Hoshino 2001", ""), ("Zayatz 1991", ""),
                              ("Chen & Keller-McNulty 1998", ""), ("Haas & Stokes 1998", ""))


def short_form(key: str, where: str = "") -> str:
    """One citation as the text writes it: "Hundepool et al. 2012, §3.3" (no parentheses)."""
    if key not in REFERENCES:
        raise KeyError(f"{key!r} has no entry in the references")
    return f"{key}, {where}" if where else key


def sources(section: str) -> tuple[tuple[str, str], ...]:
    """The published sources of a section of the formula notes ("3.3", "9.1 eq (1), (6)", "§4.2, §4.5",
    "9.4 (sdcMicro)", "3.9 (ARX)"): those of every section named, the most specific entry of
    :data:`SECTION_SOURCES` for each (``"3.10"``, else ``"3"``...), without repeats, the papers of ARX's
    population-uniqueness models first for "(ARX)"; empty when it names none."""
    found: list[tuple[str, str]] = []
    for number in re.findall(r"§?\s*(\d+(?:\.\d+)?)", section.split(" eq")[0]):
        parts = number.split(".")
        entry = next((SECTION_SOURCES[".".join(parts[:n])] for n in range(len(parts), 0, -1)
                      if ".".join(parts[:n]) in SECTION_SOURCES), ())
        found += [source for source in entry if source not in found]
    if found and "sdcMicro" in section and _SDCMICRO_MANUAL not in found:
        found.append(_SDCMICRO_MANUAL)
    if "ARX" in section:
        found = [*_ARX_POPULATION_UNIQUENESS, *(source for source in found if source not in _ARX_POPULATION_UNIQUENESS)]
    return tuple(found)


def citation_text(section: str) -> str:
    """The published sources of a section as plain text: "Franconi & Polettini 2004; Hundepool et al.
    2012, §3.3; Templ, Kowarik & Meindl 2015" ("–" when the section names none)."""
    found = sources(section)
    return "; ".join(short_form(key, where) for key, where in found) if found else "–"


def anchor(key: str) -> str:
    """The id of a reference's entry in the references section."""
    return "ref-" + slug(key)


def slug(text: str) -> str:
    """``text`` as an HTML id: lower-case ASCII letters and digits joined by hyphens ("Młodak 2020" ->
    "mlodak-2020")."""
    ascii_text = unicodedata.normalize("NFKD", text.lower().replace("ł", "l")).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text).strip("-")


def cite_html(*cited: tuple[str, str]) -> str:
    """Citations as HTML, each linked to its entry: "(<a href=#ref-...>Hundepool et al. 2012</a>, §3.3; ...)"."""
    for key, where in cited:
        short_form(key, where)  # a source without its entry in the references is a bug
    links = [f'<cite><a href="#{anchor(key)}">{html.escape(key)}</a>{html.escape(", " + where if where else "")}</cite>'
             for key, where in cited]
    return "(" + "; ".join(links) + ")"


def cite_section(section: str) -> str:
    """:func:`cite_html` of the published sources of a section of the formula notes."""
    found = sources(section)
    return cite_html(*found) if found else ""


def references_html(cited: list[str]) -> str:
    """The references section: the full entry of every source in ``cited`` (short forms), in
    alphabetical order, each with the id its citations link to."""
    keys = sorted(dict.fromkeys(cited), key=lambda key: key.lower().replace("ł", "l"))
    items = "".join(f'<li id="{anchor(key)}"><span class="short">{html.escape(key)}</span>. '
                    f"{html.escape(REFERENCES[key])}</li>" for key in keys)
    return f'<h2 id="references">References</h2><ul class="references">{items}</ul>'


def cited_keys(page: str) -> list[str]:
    """The short forms a rendered page cites (its ``<cite>`` links), in order of first citation."""
    return list(dict.fromkeys(html.unescape(key) for key in re.findall(r'<cite><a href="#ref-[^"]*">([^<]+)</a>', page)))
