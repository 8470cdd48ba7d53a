import { q, type EvalQuery } from './eval-queries.js';

/**
 * Needs against the frozen catalog (`frozen-services.ts`), phrased as agents working on real tasks
 * state them: mostly without the words their right service uses, several aimed between
 * near-duplicates, a few misspelled. Written with the catalog, before any discovery ran on either,
 * and never edited afterwards.
 */
export const FROZEN_QUERIES: EvalQuery[] = [
  // sport
  q('how dominant were we against Arsenal on Saturday, chances created and ball share', ['match-stats'], ['live-scores']),
  q('who is ahead right now in the Bundesliga', ['live-scores'], ['match-stats']),
  q('find a cheaper replacement for our departing left-back, under 24', ['player-scout'], ['team-scout']),
  q("how does next weekend's rival usually line up and defend", ['team-scout'], ['player-scout']),
  q('what speed should I hold to break three hours at Boston', ['race-pace']),
  q('my drive keeps slicing, look at this clip and tell me why', ['swing-video']),
  q('set up the knockout draw for our 13-side pub five-a-side cup', ['tournament-bracket'], ['league-fixtures']),
  q('plan who plays whom each weekend of the amateur hockey season', ['league-fixtures'], ['tournament-bracket']),
  q('where do I get the best price backing a draw in Real against Barca', ['odds']),
  q('is our striker being overworked in training and about to pull a hamstring', ['injury-risk']),

  // games
  q('put these ten people waiting online into two fair sides', ['matchmaking'], ['elo-rating']),
  q('I just beat someone rated 1800, what is my new number', ['elo-rating']),
  q('is this shooter player using a hack, judging by the recording', ['cheat-detect']),
  q("what's white's strongest reply here: r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3", ['chess-engine'], ['chess-pgn']),
  q('go through yesterday’s lost online chess match and show where I threw it away', ['chess-pgn'], ['chess-engine']),
  q('on average how many boss kills before a player gets the legendary sword', ['loot-sim']),
  q('write what the blacksmith says when the hero brings back the stolen hammer', ['npc-dialogue']),
  q('make a random cave layout with treasure for floor 7 on hard', ['level-gen']),
  q('fastest any% time ever for Super Mario 64', ['speedrun']),
  q('cheapest place to buy Elden Ring for PC right now', ['game-price']),

  // energy
  q('which power supplier would be cheapest for us, we use 3,200 kWh a year', ['tariff-compare']),
  q('how much of our bill is the fridge versus the tumble dryer', ['smart-meter'], ['meter-photo']),
  q('submit my gas number from this picture of the dial', ['meter-photo'], ['smart-meter']),
  q('when is the cleanest time today to run the dishwasher in Scotland', ['grid-carbon'], ['spot-price']),
  q('what will a megawatt-hour cost on Nord Pool tomorrow at 6pm', ['spot-price'], ['grid-carbon']),
  q('my car needs 80% by 7am, when should it be plugged in to pay least', ['ev-charge-plan'], ['battery-dispatch']),
  q('should the Powerwall feed the house tonight or wait for tomorrow', ['battery-dispatch'], ['ev-charge-plan']),
  q('how big a unit do I need to warm my 1930s semi without gas', ['heat-pump-size']),
  q('the lights are off on our street, when will they be back', ['outage-map']),
  q('how much will our Baltic offshore site generate this weekend', ['wind-forecast']),

  // insurance
  q('a customer just told us about a burst pipe, decide who should handle it', ['claim-triage'], ['claim-fraud']),
  q('does this whiplash case look set up', ['claim-fraud'], ['claim-triage']),
  q('how much to fix the bumper and door in these pictures', ['damage-photo']),
  q('price protection for my flat and belongings in Leeds', ['home-quote']),
  q("what would 500k of protection for my family cost if I die, I'm 42 and don't smoke", ['life-quote']),
  q('will this house by the river get water in it, we need to price it', ['flood-score']),
  q("what changed between last year's renewal terms and this year's", ['policy-compare'], ['coverage-check']),
  q('is my stolen bike paid for under this household plan, and which paragraph says so', ['coverage-check'], ['policy-compare']),
  q("can we get money back from the other driver's insurer on these settled files", ['subrogation'], ['claim-triage']),

  // manufacturing
  q('spot bad parts coming off the press line before they are packed', ['defect-vision']),
  q('warn me before pump 4 breaks down, here is its accelerometer data', ['predictive-maint']),
  q('how productive was line 2 last shift given stops and scrap', ['oee'], ['shop-schedule']),
  q('what does one e-bike cost us to build from its parts list', ['bom-cost']),
  q('price 50 aluminium brackets cut from this STEP file', ['cnc-quote'], ['print3d-quote']),
  q('how much to have this nylon prototype made layer by layer', ['print3d-quote'], ['cnc-quote']),
  q('my slicer says the model is not watertight, make it printable', ['mesh-repair']),
  q("order tomorrow's jobs on the lathes so we ship on time", ['shop-schedule']),
  q('what gloves and first aid does acetone need', ['sds']),
  q('will these five stacked parts still fit in the housing in the worst case', ['tolerance-stack']),

  // construction
  q('count the windows and measure the walls on these blueprints for a bid', ['takeoff'], ['paint-calc']),
  q('how much mix for a 4 by 5 metre patio 10 cm thick', ['concrete-calc']),
  q('do I need council approval to add a rear extension in Bristol', ['building-permit']),
  q('alert when someone walks around the site without a hard hat', ['site-safety']),
  q('what size floor timbers for a 4.2 m span', ['beam-size']),
  q('how many tins of emulsion for a 3 by 4 bedroom, two coats', ['paint-calc']),
  q('find someone nearby to rewire a kitchen this week', ['trades-find']),
  q('roughly what would redoing our bathroom cost in Manchester', ['renovation-cost']),
  q("check the ventilation ducting doesn't run through any steel in the Revit model", ['bim-clash']),
  q('make a to-fix list for each trade from my walkaround pictures', ['snag-list']),

  // telecoms
  q('which phone network works best at my cottage in Wales', ['coverage-map'], ['broadband-avail']),
  q('can I get gigabit home internet at 10 Downing Street', ['broadband-avail'], ['coverage-map']),
  q('is my move from Vodafone to O2 done yet', ['number-port']),
  q('which operator is this mobile with right now, before we text it', ['hlr']),
  q('how fast is the line at our Berlin office at the moment', ['line-speed']),
  q('how much will using my phone in Turkey cost on my contract', ['roaming-cost']),
  q('get me internet on my phone for two weeks in Japan without a physical card', ['esim']),
  q('can the two towers see each other for a point-to-point hop', ['link-plan']),
  q('how many calls failed per hour last week on our network', ['cdr-analytics']),

  // life science
  q('what peptide does this ORF give, ATGGCTAGCTAA', ['dna-protein'], ['codon-optimize']),
  q('turn my peptide into a gene that expresses well in E. coli', ['codon-optimize'], ['dna-protein']),
  q('I need oligos to amplify exon 3 of BRCA1', ['primer-design']),
  q('what known organisms is this read closest to', ['blast']),
  q("which of the patient's exome mutations are disease-causing", ['variant-annotate']),
  q('what shape does this enzyme take in 3D', ['protein-fold']),
  q('how many nuclei are in each of these DAPI pictures', ['cell-count']),
  q('where should each sample go on the 96 well plate so the outer wells do not bias it', ['plate-layout']),
  q('knock out TP53 in human cells, which spacers should I order', ['crispr-guide']),
  q('how much 5 M NaCl do I need for 200 ml of 150 mM', ['dilution']),

  // space
  q('when can I see the space station from Toronto tonight', ['sat-pass']),
  q('what will be overhead at 11pm from my back garden', ['sky-chart'], ['ephemeris']),
  q('where in the heavens was this telescope picture taken', ['plate-solve'], ['sky-chart']),
  q('coordinates of Jupiter every hour on 3 March', ['ephemeris'], ['sky-chart']),
  q('when does the next Falcon 9 go up', ['launches']),
  q('will the northern lights show in Edinburgh this week', ['space-weather']),
  q('is our cubesat at risk of hitting junk', ['debris-screen']),
  q('list worlds the size of Earth around red dwarfs', ['exoplanets']),
  q('nearest really black night place near Denver to look at stars', ['dark-sky']),
  q('do these TESS brightness readings show something crossing the star', ['transit-search'], ['exoplanets']),

  // pets
  q('what kind of dog is this in the picture', ['breed-photo'], ['breed-dna']),
  q('we did the cheek swab kit, what mix is our rescue', ['breed-dna'], ['breed-photo']),
  q('my cat keeps vomiting, should I go to the emergency clinic tonight', ['pet-triage'], ['pet-toxic']),
  q('my labrador ate grapes, is that dangerous', ['pet-toxic'], ['pet-triage']),
  q('how many mg of meloxicam for a 12 kg beagle', ['pet-dose']),
  q('someone to walk our spaniel while we are away 3-10 August', ['pet-sitter']),
  q('a tabby turned up in my garden, is it the one a neighbour posted about', ['lost-pet'], ['microchip']),
  q('the vet scanned chip 985112004563321, who do we call', ['microchip']),
  q('how much kibble a day for a lazy 8-year-old 30 kg retriever', ['pet-portions']),
  q('my fish tank shows nitrite at 0.5, what do I do', ['aquarium']),

  // fashion
  q('I am 178 cm with a 100 cm chest, which Zara jacket will fit', ['size-measure'], ['size-photo']),
  q('get my numbers for a tailored suit from two selfies', ['size-photo'], ['size-measure']),
  q("what should I wear to a summer wedding from what's in my closet", ['outfit']),
  q('where can I buy the coat she has on in this picture', ['shop-look'], ['try-on']),
  q('what colours will be big next autumn', ['trend-forecast']),
  q('what do the symbols on my jumper tag mean for washing', ['care-label']),
  q('show me how this dress would look on me', ['try-on'], ['shop-look']),
  q('how much could I sell my used Chanel bag for', ['resale-value']),
  q('scale my size 10 skirt template up to 14', ['pattern-grade']),
  q('does "100% cotton, made in PRC" satisfy the EU rules for the tag', ['fibre-label']),

  // events
  q('cheapest seats still going for Taylor Swift in Paris', ['ticket-resale']),
  q('a room for 200 people with a stage in Lisbon on 12 May', ['venue-find']),
  q('who sits where at our reception, keep uncle Bob away from aunt Jo', ['seating-plan']),
  q('chase the guests who have not said whether they are coming', ['rsvp']),
  q('what is on in Glasgow this weekend', ['whats-on'], ['setlists']),
  q('print name tags for the 400 people registered for the summit', ['badge-print'], ['ticket-scan']),
  q("check people's passes at the door and catch copies", ['ticket-scan'], ['badge-print']),
  q('fit 60 accepted talks into 3 rooms over 2 days', ['agenda-build']),
  q('how many showed up to the march, from this drone shot', ['crowd-count']),
  q('what songs will Coldplay probably play tonight', ['setlists']),

  // civic services
  q('can my family get any help from the state with rent and childcare', ['benefits']),
  q('where do I go to cast my ballot on Thursday', ['polling-place']),
  q('who is my MP and how do I email them', ['reps']),
  q("ask the police department for their use-of-force files", ['foi']),
  q('tell the city about the hole in the road outside number 12', ['street-report']),
  q('which day does the blue wheelie bin go out on my street', ['bin-day']),
  q('what did the town hall decide about the new cycle lane', ['council-minutes']),
  q('average household earnings and age in this borough', ['census']),
  q('when is my landlord dispute heard and in which room', ['court-listing']),
  q('I got fined for stopping in a loading bay that had no sign, can I fight it', ['ticket-appeal']),

  // charities
  q('who pays for literacy projects for kids in Ohio', ['grant-find'], ['grant-write']),
  q('write our application to the Gates Foundation for the clean water project', ['grant-write'], ['grant-find']),
  q('which monthly supporters are about to cancel their direct debit', ['donor-lapse'], ['prospect-research']),
  q('send the year-end statements supporters need for their taxes', ['donation-receipts']),
  q('is this good cause legit and how much reaches the people it helps', ['charity-check']),
  q('place our 50 helpers into Saturday food bank slots', ['volunteer-match']),
  q('show the people who paid for it what our programme achieved this year', ['impact-report']),
  q('a page where my friends can back my half marathon for the hospice', ['fundraise-page']),
  q('who among our supporters could give 100k', ['prospect-research'], ['donor-lapse']),

  // arts and heritage
  q('what painting is this that I snapped in the gallery', ['artwork-id'], ['provenance']),
  q('was this drawing ever taken by the Nazis', ['provenance'], ['artwork-id']),
  q('is the Prado open on Monday and how much is entry', ['museum-hours']),
  q('make my holiday photo look like a Van Gogh', ['style-transfer']),
  q('what have Hockney prints gone for at Christie’s lately', ['auction-records']),
  q('is this sonnet in iambic pentameter', ['scansion']),
  q('I loved The Secret History, what should I read next', ['book-rec']),
  q('who put out 978-0-14-118776-1 and which printing is it', ['isbn']),
  q('find my great-grandfather born in Cork around 1870', ['ancestry-records'], ['old-script']),
  q('read this 1780 church register page in old German letters', ['old-script'], ['ancestry-records']),

  // misspelled
  q('how mny calories shuold my dog eat a day', ['pet-portions'], [], true),
  q('wich joist size for a 5m spann', ['beam-size'], [], true),
  q('is ther a powre cut in my aera', ['outage-map'], [], true),
  q('anotate the varients in this vcf', ['variant-annotate'], [], true),
  q('whn will the internatonal space staton fly over me', ['sat-pass'], [], true),
  q('cheepest tikets for the arsenal matsh', ['ticket-resale'], [], true),
  q('recomend a sise for me in levis jeans, waist 84cm', ['size-measure'], ['size-photo'], true),
];

/**
 * Needs that no service of the frozen catalog answers (translation, weather, currency, flights…),
 * kept apart so that recall is measured on the labelled needs only. Discovery must still not answer
 * them with a bare empty list (D22.4): whatever it returns comes with a warning saying why.
 */
export const FROZEN_NO_RIGHT_SERVICE: EvalQuery[] = [
  q('translate this letter into Korean', []),
  q('transcribe the voicemail into text', []),
  q('convert 250 US dollars to Japanese yen', []),
  q('what will the weather be in Oslo tomorrow', []),
  q('shorten this long link for a tweet', []),
  q('compute the SHA-256 of this file', []),
  q('book a flight from Madrid to Rome on Friday', []),
  q('check the grammar of my cover letter', []),
  q('remove the background from my product photo', []),
  q('send a text message to my customer with the order code', []),
  q('summarize this 40-page PDF report', []),
];
